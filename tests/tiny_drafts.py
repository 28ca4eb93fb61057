"""Randomly initialised trained-draft models (MoA, EAGLE, independent) on a tiny Llama target.

The target is the tiny random Llama of :mod:`tests.tiny_targets` at width 64 (4 query heads, 2
key/value heads, 3 layers, 64 tokens); the drafts are sized by the factory's ``default_config``
for it, so they are the same code paths ``moa-train`` builds, a few hundred thousand parameters.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from drafts.neural.base import NeuralDraft, TrainBatch
from drafts.neural.factory import build_draft, default_config
from drafts.neural.target_parts import TargetParts
from drafts.target.activations import ActivationRequest, Activations
from drafts.target.loading import LoadedTarget, TargetFingerprint, tokenizer_hash
from drafts.target.runner import TargetRunner
from tests.tiny_targets import FakeTokenizer, tiny_model

SIZES = dict(hidden_size=64, intermediate_size=128, max_position_embeddings=256)


def tiny_llama(seed: int = 0) -> PreTrainedModel:
    """The tiny random Llama target (fp32, frozen)."""
    return tiny_model("llama", seed=seed, **SIZES)


def tiny_target_runner(model: PreTrainedModel, tokenizer: Any = None, name: str = "tiny-llama") -> TargetRunner:
    """A runner over ``model`` with ``tokenizer`` (default: the one-character fake) and a fingerprint named ``name``."""
    tokenizer = tokenizer if tokenizer is not None else FakeTokenizer()
    config = model.config.get_text_config()
    fingerprint = TargetFingerprint(
        name=name,
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        vocab_size=config.vocab_size,
        tokenizer_hash=tokenizer_hash(tokenizer),
    )
    return TargetRunner(LoadedTarget(model, tokenizer, fingerprint))


def random_draft(
    kind: str,
    runner: TargetRunner,
    seed: int = 0,
    d2t: torch.Tensor | None = None,
    config: dict[str, Any] | None = None,
) -> NeuralDraft:
    """A ``kind`` draft for ``runner``'s target with PyTorch's default (seeded) initialisation."""
    torch.manual_seed(seed)
    cfg = config if config is not None else default_config(kind, runner)
    return build_draft(kind, cfg, TargetParts.from_model(runner.model, d2t)).eval()


def full_request(runner: TargetRunner) -> ActivationRequest:
    """Everything any draft reads: the final hidden state and every layer's keys/values."""
    return ActivationRequest(hidden_layers=(runner.num_layers,), all_layer_kv=True)


def committed(runner: TargetRunner, tokens: list[int], request: ActivationRequest | None = None) -> Activations:
    """The target's activations of ``tokens`` run as one committed prompt."""
    request = request if request is not None else full_request(runner)
    session = runner.new_session()
    runner.extend(session, tokens, request)
    return runner.commit(session, None, request)


def target_batch(runner: TargetRunner, tokens: list[int], loss_mask: list[bool]) -> TrainBatch:
    """A one-sequence training batch with the target's activations (as the trainer builds it)."""
    acts = committed(runner, tokens)
    assert acts.kv is not None
    hidden = acts.hidden[runner.num_layers].clone()[None]  # (1, T, H), out of inference mode
    return TrainBatch(torch.tensor([tokens]), torch.tensor([loss_mask]), hidden, acts.kv.clone()[None])
