"""Per-method statistics of a benchmark, aggregated over prompts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drafts.decoding.generation import Generation


@dataclass
class MethodStats:
    """Everything moa-bench reports for one method."""

    name: str
    new_tokens: int = 0
    wall_s: float = 0.0
    target_forwards: int = 0
    draft_rounds: int = 0
    round_tokens: int = 0  # tokens produced by draft rounds (accepted + the target's own)
    proposed: int = 0
    accepted: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    identical: list[bool] = field(default_factory=list)  # per prompt, vs ar (T=0 only)
    depth_proposed: dict[int, int] = field(default_factory=dict)  # depth -> rounds drafting that deep
    depth_accepted: dict[int, int] = field(default_factory=dict)  # depth -> rounds accepting that deep
    per_prompt: list[dict[str, int]] = field(default_factory=list)  # rounds / tokens / accepted per prompt

    def add(self, gen: Generation, reference: list[int] | None) -> None:
        self.per_prompt.append(_prompt_record(gen))
        self.new_tokens += len(gen.tokens)
        self.wall_s += gen.wall_s
        self.target_forwards += gen.target_forwards
        for event in gen.draft_rounds:
            self.draft_rounds += 1
            self.round_tokens += len(event.tokens)
            self.proposed += event.proposed
            self.accepted += len(event.accepted)
            self.draft_s += event.draft_s
            self.verify_s += event.verify_s
            self._count_depths(event.proposed_depth, len(event.accepted))
        if reference is not None:
            self.identical.append(gen.tokens == reference)

    def add_plain(self, tokens: list[int], wall_s: float, forwards: int, reference: list[int] | None) -> None:
        """A run with no round structure (transformers' generate)."""
        self.new_tokens += len(tokens)
        self.wall_s += wall_s
        self.target_forwards += forwards
        if reference is not None:
            self.identical.append(tokens == reference)

    def _count_depths(self, proposed_depth: int, accepted: int) -> None:
        for depth in range(1, proposed_depth + 1):
            self.depth_proposed[depth] = self.depth_proposed.get(depth, 0) + 1
            if depth <= accepted:
                self.depth_accepted[depth] = self.depth_accepted.get(depth, 0) + 1

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s else 0.0

    @property
    def tau(self) -> float:
        """Mean tokens per target forward after the prefill, the target's own token counted."""
        return self.round_tokens / self.draft_rounds if self.draft_rounds else 1.0

    def to_json(self, ar: MethodStats | None) -> dict[str, Any]:
        rounds = max(self.draft_rounds, 1)
        return {
            "tau": self.tau,
            "accept_rate": self.accepted / self.proposed if self.proposed else None,
            "tokens_per_s": self.tokens_per_s,
            "speedup": self.tokens_per_s / ar.tokens_per_s if ar and ar.tokens_per_s else None,
            "target_forwards": self.target_forwards,
            "new_tokens": self.new_tokens,
            "wall_s": self.wall_s,
            "per_position_acceptance": {
                str(d): self.depth_accepted.get(d, 0) / n for d, n in sorted(self.depth_proposed.items())
            },
            "draft_ms_per_round": 1000 * self.draft_s / rounds if self.draft_rounds else None,
            "verify_ms_per_round": 1000 * self.verify_s / rounds if self.draft_rounds else None,
            "identical_to_ar": all(self.identical) if self.identical else None,
            "per_prompt": self.per_prompt,  # for paired per-prompt comparisons of two methods
        }


def _prompt_record(gen: Generation) -> dict[str, int]:
    """One prompt's counts: tau of the prompt = round_tokens / rounds."""
    return {
        "new_tokens": len(gen.tokens),
        "rounds": len(gen.draft_rounds),
        "round_tokens": sum(len(e.tokens) for e in gen.draft_rounds),
        "proposed": sum(e.proposed for e in gen.draft_rounds),
        "accepted": sum(len(e.accepted) for e in gen.draft_rounds),
    }
