"""Who writes after a cut in the offline-horizon benchmark, each alone from the target's exact state.

Every continuer follows the target's committed state up to the cut (``observe``: the tokens
before the root, with the activations it declared in ``needs``) and then writes ``horizon``
greedy tokens after ``context`` with no further target state (``continue_after``):

- a trained draft (``moa``, ``eagle``, ``independent`` or any ``--checkpoint`` name): the chain
  the engine's ``DraftContinuation`` grows offline, i.e. :meth:`NeuralDrafter.propose` with one
  chain of the whole horizon and no confidence stop (the engine's ``DraftChain.grow(1,
  confident_only=False)`` runs the same ``step`` calls one at a time, from the same root and
  positions);
- ``gguf``: the bundled llama.cpp model the engine's ``GGUFContinuation`` runs
  (:class:`drafts.target.gguf_model.GGUFModel`);
- ``target``: the target itself, greedy; it must keep every token (the harness's own check).

Two diagnostics tell a draft's two handicaps offline apart, over the same tokens:

- ``with_target_state``: each token drafted as the first of a fresh chain after the target
  committed every earlier one (online drafting at depth 1 everywhere);
- ``with_target_tokens``: no target state after the cut, but the chain is made of the target's
  own tokens (as the engine's ``adopt`` runs known tokens through the draft), so the draft's
  prediction at depth ``d`` counts on every sample, not only where depths ``< d`` were right.
  Until its first miss it is the offline chain itself, so it keeps exactly as many tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import torch

from drafts.decoding.autoregressive import autoregressive_rounds
from drafts.decoding.config import DecodeConfig
from drafts.decoding.generation import Generation
from drafts.drafters.base import Drafter, DraftShape, Rewindable
from drafts.drafters.registry import drafter_spec
from drafts.errors import ConfigError
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.activations import NOTHING, ActivationRequest, Activations
from drafts.target.gguf_model import GGUFModel
from drafts.target.runner import TargetRunner

GREEDY = SamplingConfig(temperature=0.0)
TARGET, GGUF = "target", "gguf"  # the two continuers that are not trained drafts


class Continuer(Protocol):
    name: str
    needs: ActivationRequest

    def begin(self, prompt: list[int]) -> None:
        """A new answer starts: drop all per-sequence state."""

    def observe(self, committed: list[int], acts: Activations) -> None:
        """The target committed ``committed`` (the tokens after those observed so far)."""

    def continue_after(self, context: list[int], horizon: int) -> list[int]:
        """``horizon`` tokens after ``context`` (whose last token, the root, is not observed yet)."""
        ...

    def close(self) -> None: ...


class DraftContinuer:
    """A trained draft writing alone: one chain of the whole horizon below the root."""

    def __init__(self, drafter: Drafter) -> None:
        if not isinstance(drafter, Rewindable):
            raise ConfigError(f"{drafter.name!r} cannot be cut back to a prefix; offline, use a trained draft")
        self.drafter = drafter
        self.name = drafter.name
        self.needs = drafter.needs
        self.observed = 0

    def begin(self, prompt: list[int]) -> None:
        self.drafter.begin(prompt)
        self.observed = 0

    def observe(self, committed: list[int], acts: Activations) -> None:
        self.drafter.observe(committed, acts, committed[-1])  # the next root is not read by trained drafts
        self.observed += len(committed)

    def continue_after(self, context: list[int], horizon: int) -> list[int]:
        assert self.observed == len(context) - 1, "observe everything before the root first"
        tree = self.drafter.propose(context, DraftShape(gamma=horizon), GREEDY, None)
        return list(tree.tokens)

    def with_target_state(self, context: list[int], answer: list[int], acts: Activations) -> list[int]:
        """The draft's first-choice token at each of ``answer``'s positions, every one drafted after the
        target committed all before it (``acts``: the activations of ``context[-1:] + answer[:-1]``,
        which it commits on the way); afterwards the draft is cut back to where it was."""
        start = self.observed
        tokens = [self.continue_after(context, 1)[0]]
        for i, token in enumerate([context[-1], *answer[:-2]]):
            self.observe([token], acts.select(slice(i, i + 1)))
            tokens += self.continue_after([*context, *answer[: i + 1]], 1)
        self.rewind(start)
        return tokens

    @torch.inference_mode()
    def with_target_tokens(self, context: list[int], answer: list[int]) -> list[int]:
        """The draft's first choice at each of ``answer``'s positions from the target state up to the
        cut, its chain being ``answer`` itself: one ``step`` per token from the root, as ``propose``."""
        assert isinstance(self.drafter, NeuralDrafter), "the diagnostic steps a trained draft's model"
        model = self.drafter.model
        device = model.parts.head_weight.device
        state, tokens, root = model.initial_state(), [], len(context) - 1
        try:
            for i, token in enumerate([context[-1], *answer[:-1]]):
                logits, state = model.step(
                    torch.tensor([token], device=device), torch.tensor([root + i], device=device), None, state
                )
                tokens.append(int(model.parts.d2t[int(logits[0].argmax())]))
        finally:
            model.end_round()
        return tokens

    def rewind(self, length: int) -> None:
        assert isinstance(self.drafter, Rewindable)
        self.drafter.truncate(length)
        self.observed = length

    def close(self) -> None:
        pass


class TargetContinuer:
    """The target, greedy, from its own session that follows the committed tokens."""

    name = TARGET
    needs = NOTHING

    def __init__(self, runner: TargetRunner) -> None:
        self.runner = runner
        self.session = runner.new_session()

    def begin(self, prompt: list[int]) -> None:
        self.session = self.runner.new_session()

    def observe(self, committed: list[int], acts: Activations) -> None:
        self.runner.extend(self.session, committed, last_only=True)
        self.runner.commit(self.session)

    def continue_after(self, context: list[int], horizon: int) -> list[int]:
        held = self.session.length
        gen = Generation(prompt_len=len(context))
        for _ in autoregressive_rounds(self.runner, context, DecodeConfig(horizon, GREEDY), gen, self.session):
            pass
        self.session.truncate(held)
        return gen.tokens

    def close(self) -> None:
        pass


class GGUFContinuer:
    """The local llama.cpp model; it reads the whole context itself (reusing its cached prefix)."""

    needs = NOTHING

    def __init__(self, model: GGUFModel) -> None:
        self.model = model
        self.name = GGUF

    def begin(self, prompt: list[int]) -> None:
        pass

    def observe(self, committed: list[int], acts: Activations) -> None:
        pass

    def continue_after(self, context: list[int], horizon: int) -> list[int]:
        tokens: list[int] = []
        for _ in range(horizon):
            tokens.append(self.model.next_token([*context, *tokens], GREEDY, None))
        return tokens

    def close(self) -> None:
        self.model.close()


@dataclass(frozen=True)
class ContinuerSpec:
    """What to build for one method name; ``gguf_path`` only for ``gguf``."""

    name: str
    gguf_path: Path | None = None
    gguf_threads: int = 1


def build_continuer(spec: ContinuerSpec, runner: TargetRunner) -> Continuer:
    if spec.name == TARGET:
        return TargetContinuer(runner)
    if spec.name == GGUF:
        if spec.gguf_path is None:
            raise ConfigError("the gguf method needs a GGUF file (--offline-model PATH)")
        vocab = int(runner.config.vocab_size)
        return GGUFContinuer(GGUFModel(spec.gguf_path, vocab, threads=spec.gguf_threads))
    return DraftContinuer(drafter_spec(spec.name).build(runner, []))


def union_needs(continuers: list[Continuer]) -> ActivationRequest:
    """Everything any continuer reads from the target (one target pass serves them all)."""
    needs = NOTHING
    for c in continuers:
        needs = needs.union(c.needs)
    return needs


def with_gguf(spec: ContinuerSpec, path: Path | None) -> ContinuerSpec:
    return replace(spec, gguf_path=path) if spec.name == GGUF else spec
