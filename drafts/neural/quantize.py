"""int8 dynamic quantization of a draft's Linear layers and of its LM head rows (CPU only, opt-in).

Dynamic quantization stores each weight as int8 (one scale per tensor) and quantizes the
activations on the fly per call, so a matrix-vector product reads a quarter of the bytes. On a
CPU a draft step is bound by reading its weights (fp32: 22 MB of layers and 38 MB of LM head rows
for a 16k draft vocabulary, more than a 32 MB L3), so this is where int8 pays. The logits
change slightly, so the *proposals* may change; verification is untouched and stays exact (at
T = 0 the output is identical to plain decoding), only tau may move. Measured in
``drafts/bench/draft_step.py`` and ``moa-bench``.

Trees (:mod:`drafts.neural.tree_search`) run a depth's frontier as one batch, and the activations of
a call share one scale: a node's logits then depend slightly on its siblings (tiny random
drafts: up to ~3 % of the largest logit), so an int8 tree may rank nodes a little differently from
their paths drafted one by one. Verification does not care (still exact); tau is measured in
``drafts/bench/results/2026-12-02-s8/cpu-shapes``.

torch's eager ``torch.ao.quantization.quantize_dynamic`` (fbgemm/x86 kernels) is deprecated in
favour of torchao but still shipped in torch 2.13; torch's weight-only
``_weight_int8pack_mm`` has no fast kernel on AVX2 CPUs (3x slower than fp32 here). A torch that
has dropped the eager API raises a :class:`~drafts.errors.ConfigError` saying so.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from drafts.errors import ConfigError
from drafts.neural.base import NeuralDraft

INT8 = "int8-dynamic"  # the name config.json's "inference": {"quantize": ...} records


def quantize_int8(model: NeuralDraft) -> NeuralDraft:
    """Quantize ``model``'s Linear layers and its LM head rows in place (CPU, fp32 only); returns it."""
    _check_cpu(model)
    quantize_dynamic = _quantize_dynamic()
    with warnings.catch_warnings():  # the eager API warns that it is deprecated, on every layer
        warnings.simplefilter("ignore")
        quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8, inplace=True)  # every Linear below the draft
        model.parts.head = _int8_head(model.parts.head_weight, quantize_dynamic)
    return model


def is_quantized(model: NeuralDraft) -> bool:
    return model.parts.head is not None


def _int8_head(head_weight: torch.Tensor, quantize_dynamic: Any) -> nn.Module:
    """The draft vocabulary's LM head rows (Dv, H) as an int8 dynamically quantized Linear."""
    rows, hidden = head_weight.shape
    linear = nn.Linear(hidden, rows, bias=False)
    linear.weight = nn.Parameter(head_weight.detach().clone(), requires_grad=False)
    return quantize_dynamic(nn.Sequential(linear), {nn.Linear}, dtype=torch.qint8).eval()


def _quantize_dynamic() -> Any:
    try:
        from torch.ao.quantization import quantize_dynamic
    except ImportError as exc:  # a future torch without the eager API
        raise ConfigError(
            f"int8 drafts use torch.ao.quantization.quantize_dynamic, which torch {torch.__version__} no longer "
            "has; derive the draft without --int8 (drafts.neural.derive) or pin torch <= 2.13"
        ) from exc
    return quantize_dynamic


def quantizable(model: NeuralDraft) -> bool:
    """Whether int8 dynamic quantization has kernels for ``model``: its layers and its head on CPU, in float32."""
    weights = [model.parts.head_weight, *model.parameters()]
    return all(w.device.type == "cpu" and w.dtype == torch.float32 for w in weights)


def _check_cpu(model: NeuralDraft) -> None:
    weight = model.parts.head_weight
    if not quantizable(model):
        raise ConfigError(
            f"int8 dynamic quantization runs on CPU float32 drafts; this one is {weight.dtype} on {weight.device}: "
            "load it with --device cpu --dtype float32, or use the checkpoint it was derived from"
        )
