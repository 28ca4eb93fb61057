"""A draft chain that grows one token at a time and outlives a verification in flight.

:class:`~drafts.neural.drafter.NeuralDrafter` drafts a whole chain per call and forgets it. Over a
network the draft keeps going while the verifier works (drafting *ahead*), and offline it keeps
going for as long as the link is down, so the chain here is incremental:

    observe(committed, acts)   the verifier committed these tokens: the draft takes in their
                               vectors; the chain is dropped
    truncate(length)           forget the committed tokens from ``length`` on (a chat's next turn
                               keeps its common prefix with the last); the chain is dropped
    restart(root)              a new chain below ``root`` (the newest token the verifier has not run)
    grow(n)                    draft n more tokens after the chain's last (fewer, and ``stalled``, where
                               the draft's top probability falls below ``min_confidence``: EAGLE-2's
                               signal that acceptance is unlikely; decided before sampling: lossless)
    adopt(root, tokens, q)     a new chain below ``root`` whose tokens are already known (drafted
                               ahead before the verifier's reply): run them through the draft
                               without choosing again, so ``grow`` continues after them
    tree(root, shape)          an EAGLE-2 dynamic tree below ``root`` instead (the core's
                               :func:`~drafts.neural.tree_search.dynamic_tree`); no chain is kept

The draft's own caches always hold the observed tokens plus this chain as scratch (its
``end_round`` drops the scratch). Positions: the root sits at ``observed`` (everything before it
is committed), drafted token i at ``observed + 1 + i``.

At T > 0 each drafted token is sampled from its proposal kept to the top ``q_top_k`` entries
and rounded to float16 (:mod:`drafts.sparse_proposal`: the rule and why it is lossless), and
keeps that proposal, which the verifier's acceptance rule needs (:mod:`drafts.acceptance`).
``q_top_k = 0`` samples from the full distribution and keeps none (deterministic proposals).
"""

from __future__ import annotations

from typing import Any

import torch

from drafts.drafters.base import DraftShape
from drafts.neural.base import NeuralDraft
from drafts.neural.tree_search import dynamic_tree
from drafts.sampling import SamplingConfig, logits_to_probs, sample
from drafts.sparse_proposal import SparseProposal, sample_sparse, truncate
from drafts.target.activations import Activations
from drafts.tree import DraftTree


class DraftChain:
    """One draft's chain below the newest unverified token; see the module docstring. Not thread-safe."""

    def __init__(self, model: NeuralDraft, sampling: SamplingConfig, generator: torch.Generator | None) -> None:
        self.model = model.eval()
        self.sampling = sampling
        self.generator = generator
        self.min_confidence = 0.0  # a chain stops where the draft's top probability is below this (0: off)
        self.q_top_k = 32  # at T > 0, sample from (and keep) the top-K proposal; 0: the full one, kept as None
        self.stalled = False  # this chain reached such a position: it grows no further this round
        self.observed = 0  # committed tokens the draft has taken in
        self.history: list[int] = []  # ... which ones
        self.root: int | None = None
        self.tokens: list[int] = []  # drafted below the root, in order
        self.q: list[SparseProposal | None] = []  # 1-row proposal of each drafted token; None at T = 0 or unknown
        self._unstepped: int | None = None  # the newest chain token (or the root), not yet run through the draft
        self._logits: torch.Tensor | None = None  # (Dv,) the draft's prediction after the last token it ran
        self._state: Any = None  # per-token recurrent state (EAGLE's predicted feature)

    @property
    def device(self) -> torch.device:
        return self.model.parts.head_weight.device

    # -- committed state ---------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything: a new generation starts."""
        self.model.reset()
        self.observed = 0
        self.history = []
        self._drop()

    def observe(self, committed: list[int], acts: Activations) -> None:
        """The verifier committed ``committed`` (their vectors in ``acts``); the chain is dropped."""
        self.model.end_round()
        if committed:
            self.model.observe(committed, self.observed, acts)
            self.observed += len(committed)
            self.history += committed
        self._drop()

    def truncate(self, length: int) -> int:
        """Keep the first ``length`` committed tokens; returns how many were kept (0 for a draft that
        cannot cut back: it is reset and observes everything again)."""
        self.model.end_round()
        self._drop()
        if length >= self.observed:
            return self.observed
        try:
            self.model.truncate(length)
        except (NotImplementedError, AttributeError):
            self.reset()
            return 0
        self.observed, self.history = length, self.history[:length]
        return length

    # -- the chain ---------------------------------------------------------------------------
    def restart(self, root: int) -> None:
        """A new, empty chain below ``root``."""
        self.model.end_round()
        self._drop()
        self.root = root
        self._unstepped = root
        self._state = self.model.initial_state()

    def grow(self, n: int, confident_only: bool = True) -> list[int]:
        """Draft up to ``n`` more tokens after the chain's last; returns them (see ``min_confidence``)."""
        assert self.root is not None, "restart() the chain before growing it"
        new = []
        for _ in range(n):
            if self.stalled and confident_only:
                break
            self._run_unstepped()
            assert self._logits is not None
            if confident_only and self.min_confidence and self._confidence(self._logits) < self.min_confidence:
                self.stalled = True
                break
            token, q = self._choose(self._logits)
            self.tokens.append(token)
            self.q.append(q)
            self._unstepped = token
            new.append(token)
        return new

    def adopt(self, root: int, tokens: list[int], q: list[SparseProposal | None]) -> None:
        """A new chain below ``root`` made of ``tokens``, already drafted (``q``: their proposals, or [])."""
        self.restart(root)
        for token in tokens:
            self._run_unstepped()
            self.tokens.append(token)
            self._unstepped = token
        self.q = list(q) if len(q) == len(tokens) else [None] * len(tokens)

    @torch.inference_mode()
    def tree(self, root: int, shape: DraftShape) -> DraftTree:
        """An EAGLE-2 tree below ``root`` (deterministic proposals: lossless at any temperature)."""
        self.model.end_round()
        self._drop()
        try:
            return dynamic_tree(self.model, root, self.observed, shape)
        finally:
            self.model.end_round()

    def proposal_q(self, count: int) -> SparseProposal | None:
        """Top-K proposals of the chain's first ``count`` tokens; None if any is unknown (greedy)."""
        return stacked(self.q[:count])

    # -- internals ---------------------------------------------------------------------------
    @torch.inference_mode()
    def _run_unstepped(self) -> None:
        if self._unstepped is None:
            return
        position = self.observed + len(self.tokens)  # the root at `observed`, token i at observed + 1 + i
        token = torch.tensor([self._unstepped], device=self.device)
        logits, self._state = self.model.step(token, torch.tensor([position], device=self.device), None, self._state)
        self._logits = logits[0]
        self._unstepped = None

    @staticmethod
    def _confidence(logits: torch.Tensor) -> float:
        return float(torch.softmax(logits.float(), -1).max())

    def _choose(self, logits: torch.Tensor) -> tuple[int, SparseProposal | None]:
        """(target token id, the top-K proposal it was sampled from; None when greedy or q_top_k = 0)."""
        parts = self.model.parts
        if self.sampling.greedy:
            return int(parts.d2t[int(logits.argmax())]), None
        q = logits_to_probs(logits, self.sampling)  # (Dv,) the transform the target's p goes through
        if self.q_top_k == 0:
            return int(parts.d2t[int(sample(q, self.generator))]), None
        proposal = truncate(q, self.q_top_k, torch.float16, ids=parts.d2t)  # target-vocabulary ids
        return sample_sparse(proposal, self.generator), proposal

    def _drop(self) -> None:
        self.stalled = False
        self.root = None
        self.tokens, self.q = [], []
        self._unstepped = self._logits = self._state = None


def stacked(q: list[SparseProposal | None]) -> SparseProposal | None:
    """The (n, K) proposals as a Verify carries them; None (deterministic) if any is unknown."""
    if not q or any(x is None for x in q):
        return None
    return SparseProposal.stack([x for x in q if x is not None])
