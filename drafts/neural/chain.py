"""A draft chain that grows one token at a time: the one routine every neural chain is drafted by.

:meth:`NeuralDrafter.propose <drafts.neural.drafter.NeuralDrafter.propose>` grows one of these to
``gamma`` tokens in one go (the single-device loop, ``moa-bench``). Over a network the draft keeps
going while the verifier works (drafting *ahead*), and offline for as long as the link is down,
so the chain is incremental and outlives a call:

    grow(n)          draft up to n more tokens after the chain's last; fewer (and ``stalled``)
                     where the draft's top probability falls below the policy's ``min_confidence`` (EAGLE-2's
                     signal that acceptance is unlikely; decided *before* sampling, so a kept
                     token is still drawn from its q: lossless at T > 0); ``banned`` target ids
                     are never chosen (offline: no stop as an answer's first token)
    tokens, q        the drafted tokens and the proposal each was drawn from
    tree(count)      the first ``count`` tokens as the DraftTree a verifier takes
    sparse_q(count)  their top-K proposals as a Verify carries them (None: send them deterministic)

A chain is created by its drafter below a root (:meth:`NeuralDrafter.start_chain`), possibly made
of tokens already known (drafted ahead before the verifier's reply): those are run through the
draft without choosing again, so ``grow`` continues after them. The draft's caches hold the
observed tokens plus the chain as scratch; the drafter drops the chain (``live`` turns False)
when it observes, truncates or drafts a tree. Positions: the root at ``position``, drafted token
i at ``position + 1 + i``.

What each token keeps of its proposal (:class:`ChainPolicy`'s ``q_top_k``):

    T = 0          nothing (None): greedy tokens are verified as deterministic proposals
    q_top_k = 0    the full distribution over the target vocabulary, (V,) float32 (in-process
                   verification: the single-device loop)
    q_top_k = K    its top K entries rounded to float16 (:mod:`drafts.sparse_proposal`: the rule
                   and why it is lossless), and the token is sampled from exactly that
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from drafts.neural.base import NeuralDraft
from drafts.sampling import SamplingConfig, logits_to_probs, sample
from drafts.sparse_proposal import SparseProposal, sample_sparse, truncate
from drafts.tree import DraftTree

Proposal = SparseProposal | torch.Tensor | None  # one drafted token's q: top-K, full (V,), or none (greedy)


@dataclass(frozen=True)
class ChainPolicy:
    """How a chain chooses its tokens and what it keeps of their proposals."""

    sampling: SamplingConfig  # the transform the target's p goes through too (greedy at T = 0)
    min_confidence: float = 0.0  # stop where the draft's top probability is below this (0: off)
    q_top_k: int = 0  # at T > 0: sample from (and keep) the top-K proposal; 0: the full one


class IncrementalChain:
    """One chain below ``root``; see the module docstring. Not thread-safe."""

    def __init__(
        self,
        model: NeuralDraft,
        root: int,
        position: int,
        policy: ChainPolicy,
        generator: torch.Generator | None,
    ) -> None:
        self.model = model
        self.root = root
        self.position = position
        self.policy = policy
        self.generator = generator
        self.tokens: list[int] = []  # drafted below the root, in order
        self.q: list[Proposal] = []  # the proposal of each drafted token
        self.stalled = False  # the chain reached a position below min_confidence: it grows no further
        self.live = True  # False once the drafter dropped it (its scratch is gone from the caches)
        self._unstepped: int | None = root  # the newest token (or the root), not yet run through the draft
        self._logits: torch.Tensor | None = None  # (Dv,) the draft's prediction after the last token it ran
        self._state: Any = model.initial_state()  # per-token recurrent state (EAGLE's predicted feature)

    @torch.inference_mode()
    def grow(self, n: int, confident_only: bool = True, banned: Collection[int] = ()) -> list[int]:
        """Draft up to ``n`` more tokens; returns them. ``confident_only=False`` ignores ``min_confidence``
        (offline, where nothing better would be written instead); no token of ``banned`` (target ids) is
        chosen (offline tokens are verified as deterministic proposals, so this costs no losslessness)."""
        assert self.live, "the drafter dropped this chain (it observed, truncated or drafted a tree)"
        new: list[int] = []
        for _ in range(n):
            if self.stalled and confident_only:
                break
            logits = self._predict()
            floor = self.policy.min_confidence
            if confident_only and floor and _confidence(logits) < floor:
                self.stalled = True
                break
            token, q = self._choose(self._without(logits, banned) if banned else logits)
            self.tokens.append(token)
            self.q.append(q)
            self._unstepped = token
            new.append(token)
        return new

    @torch.inference_mode()
    def follow(self, tokens: Sequence[int], q: Sequence[Proposal] = ()) -> None:
        """Append ``tokens`` chosen already (drafted ahead, or written offline) with their proposals
        (``q``: one each, or none): they are run through the draft, not chosen again."""
        assert self.live, "the drafter dropped this chain (it observed, truncated or drafted a tree)"
        kept = list(q) if len(q) == len(tokens) else [None] * len(tokens)
        for token, proposal in zip(tokens, kept, strict=True):
            self._predict()
            self.tokens.append(token)
            self.q.append(proposal)
            self._unstepped = token

    def tree(self, count: int | None = None) -> DraftTree:
        """The first ``count`` tokens (all by default) as a chain to verify, with their proposals."""
        n = len(self.tokens) if count is None else count
        rows = self.q[:n]
        if rows and all(isinstance(r, torch.Tensor) for r in rows):
            return DraftTree.chain(self.tokens[:n], torch.stack([r for r in rows if isinstance(r, torch.Tensor)]))
        return DraftTree.chain(self.tokens[:n], None, self.sparse_q(n))

    def sparse_q(self, count: int) -> SparseProposal | None:
        """The top-K proposals of the first ``count`` tokens; None (deterministic) if any has none."""
        return stacked(self.q[:count])

    # -- internals ---------------------------------------------------------------------------
    def _predict(self) -> torch.Tensor:
        """(Dv,) the draft's logits after the chain's last token (running it through the draft once)."""
        if self._unstepped is not None:
            device = self.model.parts.head_weight.device
            position = self.position + len(self.tokens)  # the root at `position`, token i at position + 1 + i
            token = torch.tensor([self._unstepped], device=device)
            logits, self._state = self.model.step(token, torch.tensor([position], device=device), None, self._state)
            self._logits, self._unstepped = logits[0], None
        assert self._logits is not None
        return self._logits

    def _without(self, logits: torch.Tensor, banned: Collection[int]) -> torch.Tensor:
        """(Dv,) ``logits`` with the draft ids of the ``banned`` target ids at -inf (a copy)."""
        d2t = self.model.parts.d2t
        hit = torch.isin(d2t, torch.tensor(sorted(banned), dtype=d2t.dtype, device=d2t.device))
        return logits.masked_fill(hit, float("-inf"))

    def _choose(self, logits: torch.Tensor) -> tuple[int, Proposal]:
        """(target token id, the proposal it was drawn from) under this chain's sampling."""
        parts, policy = self.model.parts, self.policy
        if policy.sampling.greedy:
            return int(parts.d2t[int(logits.argmax())]), None
        q = logits_to_probs(logits, policy.sampling)  # (Dv,) the transform the target's p goes through
        if policy.q_top_k == 0:
            return int(parts.d2t[int(sample(q, self.generator))]), parts.to_full_vocab(q)
        proposal = truncate(q, policy.q_top_k, torch.float16, ids=parts.d2t)  # target-vocabulary ids
        return sample_sparse(proposal, self.generator), proposal


def _confidence(logits: torch.Tensor) -> float:
    return float(torch.softmax(logits.float(), -1).max())


def stacked(q: Sequence[Proposal]) -> SparseProposal | None:
    """The (n, K) proposals as a Verify carries them; None (deterministic) unless every one is top-K."""
    rows = [x for x in q if isinstance(x, SparseProposal)]
    if not q or len(rows) != len(q):
        return None
    return SparseProposal.stack(rows)
