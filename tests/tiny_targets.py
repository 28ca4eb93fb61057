"""Tiny random-weight targets for unit tests: real transformers models, a one-character tokenizer.

Each architecture the runner must support is built from a small config (3 layers, 64 tokens),
so a forward pass costs about a millisecond. Gemma 3 mixes sliding and full attention layers and
Mistral slides every layer, both with a 4-token window, so prompts longer than 4 tokens exercise
the sliding-window masks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from drafts.target.loading import LoadedTarget, TargetFingerprint, tokenizer_hash
from drafts.target.runner import TargetRunner

VOCAB = 64
SLIDING_WINDOW = 4
ARCHITECTURES = ("llama", "qwen2", "mistral", "gemma3")
ALPHABET = "".join(chr(0x30 + i) for i in range(VOCAB))  # '0', '1', ... one character per token id

_COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,  # grouped-query attention, as in the real targets
    max_position_embeddings=128,
    initializer_range=0.2,  # logits spread by ~1, so 1e-4 tolerances and argmaxes mean something
    eos_token_id=None,  # stop tokens come from FakeTokenizer only
    bos_token_id=None,
    pad_token_id=None,
)


class FakeTokenizer:
    """Token id ``i`` is the character ``ALPHABET[i]``; no chat template, no special tokens."""

    chat_template = None

    def __init__(self, eos_token_id: int | None = None) -> None:
        self.eos_token_id = eos_token_id

    def get_vocab(self) -> dict[str, int]:
        return {char: i for i, char in enumerate(ALPHABET)}

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return "".join(ALPHABET[i] for i in ids)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [ord(char) % VOCAB for char in text]


def tiny_model(architecture: str, seed: int = 0, **overrides: object) -> PreTrainedModel:
    """A randomly initialised fp32 model of ``architecture`` (one of :data:`ARCHITECTURES`)."""
    torch.manual_seed(seed)
    options = {**_COMMON, **overrides}
    if architecture == "llama":
        model = LlamaForCausalLM(LlamaConfig(**options))
    elif architecture == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**options))
    elif architecture == "mistral":
        model = MistralForCausalLM(MistralConfig(**options, sliding_window=SLIDING_WINDOW))
    elif architecture == "gemma3":
        config = Gemma3TextConfig(
            **options,
            head_dim=8,
            sliding_window=SLIDING_WINDOW,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        )
        model = Gemma3ForCausalLM(config)
    else:
        raise ValueError(f"no tiny {architecture!r}; use one of {ARCHITECTURES}")
    return model.eval().requires_grad_(False)


def tiny_runner(model: PreTrainedModel, eos_token_id: int | None = None) -> TargetRunner:
    """A runner over ``model`` with the fake tokenizer (stop token: ``eos_token_id``, if any)."""
    tokenizer = FakeTokenizer(eos_token_id)
    config = model.config.get_text_config()
    fingerprint = TargetFingerprint(
        name=f"tiny-{config.model_type}",
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        vocab_size=config.vocab_size,
        tokenizer_hash=tokenizer_hash(tokenizer),
    )
    return TargetRunner(LoadedTarget(model, tokenizer, fingerprint))


def random_tokens(count: int, seed: int) -> list[int]:
    """``count`` token ids drawn uniformly with a seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (count,), generator=generator).tolist()
