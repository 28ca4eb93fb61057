"""A GGUF model through llama.cpp that gives the next token's logits after a context.

The offline mode's local model (the bundled SmolLM2 GGUF, :func:`drafts.locations.smollm2_gguf`)
writes while the verifier is unreachable; its tokens go to the verifier afterwards, so it must
share the target's vocabulary. Successive contexts usually extend one another, so each call
evaluates only what follows the prefix it shares with the tokens llama.cpp already holds.

Used by the engine's ``GGUFContinuation`` (``app/engine/offline.py``, which runs it on its own
thread and keeps it warm while online) and by the offline-horizon benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drafts.errors import ConfigError, ModelLoadError
from drafts.sampling import SamplingConfig, choose
from drafts.target.chat import common_prefix


class GGUFModel:
    """One llama.cpp context; ``logits_after`` reuses the longest cached prefix."""

    def __init__(
        self, path: Path, vocab_size: int, n_ctx: int = 4096, threads: int = 1, instead: str = "drop the gguf method"
    ) -> None:
        """``instead``: the caller's way to go on without llama.cpp, for the error when it is missing."""
        try:
            import llama_cpp
        except ImportError as exc:  # an optional dependency of the offline mode only
            raise ModelLoadError(
                f"the GGUF offline model {path.name} needs llama-cpp-python: "
                f"pip install llama-cpp-python (or {instead})"
            ) from exc
        self.path = path
        self.n_ctx = n_ctx
        self._llama_cpp: Any = llama_cpp
        # n_threads_batch too: its default (every core) spins against everything else on small machines.
        self.llm = llama_cpp.Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, verbose=False
        )
        if self.llm.n_vocab() != vocab_size:
            n_vocab = self.llm.n_vocab()
            self.close()
            raise ConfigError(
                f"the offline model {path.name} has a vocabulary of {n_vocab} tokens, the target {vocab_size}; "
                "use a GGUF of the target's own family (its tokens go to the verifier)"
            )

    def logits_after(self, context: list[int]) -> np.ndarray:
        """(V,) float32 logits of the token after ``context``."""
        if len(context) >= self.n_ctx:
            raise ConfigError(f"{len(context)} tokens exceed the offline model's context of {self.n_ctx}")
        cached = self.llm.input_ids[: self.llm.n_tokens].tolist()
        common = common_prefix(cached, context[:-1])  # keep at least the last token to evaluate
        self.llm.n_tokens = common  # the next eval drops the cache from here on
        self.llm.eval(context[common:])
        logits = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(logits, shape=(self.llm.n_vocab(),)).copy()

    def next_token(
        self,
        context: list[int],
        sampling: SamplingConfig,
        generator: torch.Generator | None,
        banned: Sequence[int] = (),
    ) -> int:
        """The token after ``context``, chosen by the rule the target uses; never one of ``banned``."""
        logits = torch.from_numpy(self.logits_after(context))  # (V,)
        if banned:
            logits[list(banned)] = float("-inf")
        return choose(logits, sampling, generator)

    def close(self) -> None:
        self.llm.close()
