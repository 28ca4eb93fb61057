"""What keeps writing while the verifier is unreachable: the draft alone, or a local GGUF model.

- :class:`DraftContinuation` (the default, as in the MoA paper): the draft keeps drafting from its
  last verified state: the chain that was in flight when the link died, then onwards. It costs
  nothing to switch to (the draft is already loaded and warm), but its tokens drift from the
  target's as the chain grows away from the last target state it saw.
- :class:`GGUFContinuation` (``offline_model=PATH``): a full small model through llama.cpp, e.g.
  the bundled SmolLM2 GGUF (``drafts.locations.smollm2_gguf()``): better text, more compute. It
  must share the target's vocabulary (the verifier checks its tokens). So that switching to it
  costs no pause, it follows the confirmed context while online (``follow``) on its own thread,
  keeping its KV cache warm; at a cut only the last round's tokens are left to evaluate.

Both choose tokens with :func:`drafts.sampling.choose`, the rule the target uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from drafts.neural.chain import ChainPolicy
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.gguf_model import GGUFModel

T = TypeVar("T")
Work = Callable[..., Awaitable[Any]]  # runs a function on the draft's worker thread


class OfflineContinuation(Protocol):
    name: str  # for LinkLost.continuing_with

    def follow(self, context: list[int]) -> None:
        """The confirmed context grew (online): prepare for a cut. Returns at once."""

    async def begin(self, context: list[int]) -> list[int]:
        """An offline spell starts after ``context`` (prompt, confirmed and offline tokens so far);
        returns tokens it already holds beyond it, to show at once."""
        ...

    async def next_token(
        self, context: list[int], sampling: SamplingConfig, banned: frozenset[int] = frozenset()
    ) -> int | None:
        """The token after ``context`` (prompt + confirmed + offline so far), never one of ``banned``;
        None when it cannot go on."""
        ...

    def close(self) -> None: ...


class DraftContinuation:
    """The draft alone: grows the draft's chain (the core's, as online), aligned with the offline tokens."""

    name = "draft"

    def __init__(self, drafter: NeuralDrafter, work: Work, policy: ChainPolicy, generator: Any) -> None:
        self.drafter = drafter
        self.work = work
        self.policy = policy  # the generation's: its sampling (a chain continued from online keeps its own)
        self.generator = generator

    def follow(self, context: list[int]) -> None:
        pass  # the draft follows the context anyway: it observes every verified token

    async def begin(self, context: list[int]) -> list[int]:
        """The chain drafted before the cut (the one in flight and the tokens drafted ahead) goes on.

        The chain hangs below the first token the draft has not observed (the root); everything
        after it in ``context`` becomes the chain's start if it is not already: a spell that cut a
        repair short, or an answer begun offline after a new message the verifier never saw.
        """
        drafter = self.drafter
        if drafter.observed == 0 or drafter.observed >= len(context):
            return []
        root, shown = context[drafter.observed], context[drafter.observed + 1 :]
        chain = drafter.chain
        if chain is None or chain.root != root or chain.tokens[: len(shown)] != shown:
            chain = await self.work(drafter.start_chain, root, self.policy, self.generator, shown)
        return chain.tokens[len(shown) :]

    async def next_token(
        self, context: list[int], sampling: SamplingConfig, banned: frozenset[int] = frozenset()
    ) -> int | None:
        chain = self.drafter.chain
        if self.drafter.observed == 0 or chain is None:
            return None  # the draft has seen no target state yet: it cannot write
        tokens: list[int] = await self.work(chain.grow, 1, False, banned)  # offline, confidence does not stop it
        chain.q[-1] = None  # offline tokens are verified as deterministic proposals: no q kept
        return tokens[0]

    def close(self) -> None:
        pass


class GGUFContinuation:
    """A llama.cpp model (:class:`drafts.target.gguf_model.GGUFModel`) on its own thread; see the module docstring."""

    def __init__(self, path: Path, vocab_size: int, n_ctx: int = 4096, threads: int = 1) -> None:
        self.model = GGUFModel(path, vocab_size, n_ctx, threads, instead="--offline-model none: the draft alone")
        self.name = f"gguf:{path.name}"
        self.n_ctx = n_ctx
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="moa-offline")
        self._following: Any = None  # the last follow job, superseded by the next

    def follow(self, context: list[int]) -> None:
        if len(context) >= self.n_ctx:
            return
        if self._following is not None and not self._following.done():
            self._following.cancel()  # not started yet: the newer context covers it
        self._following = self._thread.submit(self.model.logits_after, list(context))

    async def begin(self, context: list[int]) -> list[int]:
        return []

    async def next_token(
        self, context: list[int], sampling: SamplingConfig, banned: frozenset[int] = frozenset()
    ) -> int | None:
        if len(context) >= self.n_ctx:
            return None
        loop = asyncio.get_running_loop()
        choose = self.model.next_token
        return await loop.run_in_executor(self._thread, choose, list(context), sampling, None, sorted(banned))

    def close(self) -> None:
        self._thread.shutdown(wait=True, cancel_futures=True)
        self.model.close()
