"""A trained draft (MoA, EAGLE, independent) behind the :class:`~drafts.drafters.base.Drafter`
interface: chains (greedy, sampled with their proposal q at T > 0, or cut by a confidence floor)
and EAGLE-2 dynamic trees, for the single-device loop and the network client alike.

    begin / observe / truncate   what the target committed (the draft's caches follow it)
    propose(context, shape)      one round's candidates in one go (the single-device loop)
    start_chain(root, ...)       an :class:`~drafts.neural.chain.IncrementalChain` that grows on
                                 demand (the network client drafts ahead and offline with it);
                                 ``propose`` drafts its chains through the same routine
    tree(root, shape)            an EAGLE-2 dynamic tree (:mod:`drafts.neural.tree_search`)
    fan(root, width, depth)      the top ``width`` next tokens, a greedy chain below each
                                 (:mod:`drafts.neural.fan`: speculative streaming's proposals)

The draft holds at most one chain (``chain``): observing, truncating or drafting a tree drops it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from drafts.drafters.base import DraftShape
from drafts.neural.base import NeuralDraft
from drafts.neural.chain import ChainPolicy, IncrementalChain, Proposal
from drafts.neural.fan import fan_tree
from drafts.neural.tree_search import DEFAULT_SCORING, TreeScoring, dynamic_tree
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.tree import DraftTree


class NeuralDrafter:
    def __init__(
        self, model: NeuralDraft, name: str | None = None, q_top_k: int = 0, tree_scoring: TreeScoring = DEFAULT_SCORING
    ) -> None:
        self.model = model.eval()
        self.name = name or model.kind
        self.needs = model.needs
        self.q_top_k = q_top_k  # what ``propose``'s sampled chains keep of q: 0 the full (V,) rows, K the top K
        self.tree_scoring = tree_scoring  # how a tree's nodes are ranked (drafts.neural.tree_search.TreeScoring)
        self.history: list[int] = []  # the committed tokens the draft has observed
        self.chain: IncrementalChain | None = None  # the chain drafted below the root, if any

    @property
    def observed(self) -> int:
        return len(self.history)

    def begin(self, prompt: list[int]) -> None:
        self._drop()
        self.model.reset()
        self.history = []

    def observe(self, committed: list[int], acts: Activations, next_token: int | None = None) -> None:
        """The target committed ``committed`` (their activations in ``acts``); the chain is dropped."""
        self._drop()
        if committed:
            self.model.observe(committed, self.observed, acts)
            self.history += committed

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` observed tokens (a conversation's common prefix with its last turn)."""
        if not 0 <= length <= self.observed:
            raise ValueError(f"cannot cut the draft back to {length} tokens: it has observed {self.observed}")
        self._drop()
        self.model.truncate(length)
        del self.history[length:]

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        position = len(context) - 1  # the root's position
        try:
            if shape.is_tree:
                return self._tree(context[-1], position, shape)
            policy = ChainPolicy(cfg, shape.min_confidence, self.q_top_k)
            chain = self._start(context[-1], position, policy, generator)
            chain.grow(shape.gamma)
            return chain.tree()
        finally:
            self._drop()

    def start_chain(
        self,
        root: int,
        policy: ChainPolicy,
        generator: torch.Generator | None,
        tokens: Sequence[int] = (),
        q: Sequence[Proposal] = (),
    ) -> IncrementalChain:
        """A new chain below ``root`` (the token after the observed ones), starting with ``tokens``
        chosen already (their proposals ``q``, or none); it becomes ``self.chain``."""
        chain = self._start(root, self.observed, policy, generator)
        chain.follow(tokens, q)
        return chain

    def tree(self, root: int, shape: DraftShape) -> DraftTree:
        """An EAGLE-2 tree below ``root`` (deterministic candidates: lossless at any temperature)."""
        try:
            return self._tree(root, self.observed, shape)
        finally:
            self._drop()

    def fan(self, root: int, width: int, depth: int, lead: int = 1) -> DraftTree:
        """``width`` chains of ``depth`` tokens below ``root``, one per top-``width`` next token (deterministic);
        ``lead`` > 1: one per top-``width`` path of ``lead`` tokens (:func:`drafts.neural.fan.fan_tree`)."""
        try:
            with torch.inference_mode():
                return fan_tree(self.model, root, self.observed, width, depth, lead)
        finally:
            self._drop()

    # -- internals ---------------------------------------------------------------------------
    def _start(
        self, root: int, position: int, policy: ChainPolicy, generator: torch.Generator | None
    ) -> IncrementalChain:
        self._drop()
        self.chain = IncrementalChain(self.model, root, position, policy, generator)
        return self.chain

    @torch.inference_mode()
    def _tree(self, root: int, position: int, shape: DraftShape) -> DraftTree:
        self._drop()
        return dynamic_tree(self.model, root, position, shape, self.tree_scoring)

    def _drop(self) -> None:
        """Forget the chain (and any tree's scratch tokens): the caches hold the observed tokens only."""
        if self.chain is not None:
            self.chain.live = False
            self.chain = None
        self.model.end_round()
