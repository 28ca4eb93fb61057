"""The backends under contract: each registered here runs every test of ``test_contract.py``.

A future backend (a vLLM plugin, TensorRT-LLM) plugs in by adding one factory to
:data:`BACKENDS`: it receives the reference runner (the same target weights, for the expected
values), the MoA memory compressor to serve, and the limits the test asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from drafts.moa.model import MoADraft
from drafts.target.packed_linear import pack_linear_layers
from drafts.target.runner import TargetRunner
from server_stub.backend.base import TargetBackend
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import tiny_model, tiny_runner

BackendFactory = Callable[[TargetRunner, MemoryCompressor | None, dict[str, Any]], TargetBackend]


def _transformers(runner: TargetRunner, compressor: MemoryCompressor | None, limits: dict[str, Any]) -> TargetBackend:
    return TransformersBackend(runner, TransformersBackendConfig(**limits), compressor)


def _transformers_packed(
    runner: TargetRunner, compressor: MemoryCompressor | None, limits: dict[str, Any]
) -> TargetBackend:
    """moa-server's CPU float32 default: the target's Linear layers packed for oneDNN. The reference runner
    shares the model, so the expected values come from the packed target too (as they must: ``ar`` and the
    verifier compared on one kind of layers)."""
    pack_linear_layers(runner.model)
    return TransformersBackend(runner, TransformersBackendConfig(**limits), compressor)


BACKENDS: dict[str, BackendFactory] = {"transformers": _transformers}
if torch.backends.mkldnn.is_available():
    BACKENDS["transformers-packed"] = _transformers_packed


@dataclass
class Subject:
    """A backend under test and the reference it must agree with."""

    backend: TargetBackend
    runner: TargetRunner  # the same target, run directly, for expected values
    compressor: MemoryCompressor | None


SubjectFactory = Callable[..., Subject]


@pytest.fixture(params=sorted(BACKENDS))
def make_subject(request: pytest.FixtureRequest) -> SubjectFactory:
    """``make_subject(architecture="llama", memory=False, **limits)`` -> a fresh backend on a tiny target."""
    factory = BACKENDS[request.param]

    def make(architecture: str = "llama", memory: bool = False, **limits: Any) -> Subject:
        runner = tiny_target_runner(tiny_llama()) if architecture == "llama" else tiny_runner(tiny_model(architecture))
        compressor = None
        if memory:
            draft = random_draft("moa", runner, seed=1)
            assert isinstance(draft, MoADraft)
            compressor = MemoryCompressor(draft, "moa-test")
        return Subject(factory(runner, compressor, limits), runner, compressor)

    return make
