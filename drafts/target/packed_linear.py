"""The target's Linear layers with oneDNN (mkldnn) prepacked weights: the CPU float32 default for inference.

PyTorch's dense CPU Linear re-lays-out (packs) its weight on every call with more than one row,
so on this kind of CPU a verify of 2-5 tokens cost 1.5-2x a one-token step although the weights
are read once either way. A weight packed once for oneDNN (``torch._C._nn.mkldnn_linear``) skips
that: measured on a loaded 2-core EPYC with SmolLM2-135M (300-token context, one thread, interleaved
medians): one token 248 -> 112 ms, two 367 -> 167 ms, five 506 -> 168 ms. Each weight is laid out once for
the rows a verify brings (:func:`_laid_out_for_rows`), not handed over plain for oneDNN to re-lay out.

Which layers a target runs is one decision, :func:`resolve_linear`, made once where the target loads
(:func:`drafts.target.loading.load_target`): ``auto`` is ``packed`` on a CPU in float32 with oneDNN,
``dense`` anywhere else. Inference only: a packed layer refuses an input that wants gradients
(training loads the target ``dense``: the drafts train on dense activations, and autograd needs the
weights). oneDNN rounds differently from the dense kernels, so whatever is compared with the target's
own greedy output (``ar``) must run on a target loaded the same way. The packed copy replaces the dense
weight, except the LM head's and any weight shared with another module (tied to the embeddings): the
drafts read the head rows (``TargetParts``), the embeddings stay an ``nn.Embedding``. Measured for
SmolLM2-135M (fp32, after a 300-token prefill): RSS 977 MB dense, +516 MB packed beside every dense
weight, +114 MB packed alone (``drafts/bench/results/2026-12-02-s7/packed-default/memory.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import torch
from torch import nn

from drafts.errors import ConfigError

LINEAR_CHOICES = ("auto", "packed", "dense")
PACK_ROWS = 64  # the input rows oneDNN lays a packed weight out for; 16-300 measured alike
Linear = Literal["packed", "dense"]


def resolve_linear(choice: str, device: torch.device, dtype: torch.dtype) -> Linear:
    """``auto``: ``packed`` where it applies (CPU, float32, oneDNN), else ``dense``; ``packed`` is checked."""
    if choice not in LINEAR_CHOICES:
        raise ConfigError(f"unknown linear mode {choice!r}; use one of {', '.join(LINEAR_CHOICES)}")
    problem = _unpackable_because(device, dtype)
    if choice == "auto":
        return "dense" if problem else "packed"
    if choice == "packed" and problem:
        raise ConfigError(f"packed Linear layers need {problem}; use the dense layers (--dense-linear)")
    return "packed" if choice == "packed" else "dense"


def _unpackable_because(device: torch.device, dtype: torch.dtype) -> str | None:
    if not torch.backends.mkldnn.is_available():
        return "a PyTorch build with oneDNN (mkldnn)"
    if device.type != "cpu" or dtype != torch.float32:
        return f"CPU float32 weights, and this target is {str(dtype).removeprefix('torch.')} on {device}"
    return None


class PackedLinear(nn.Module):
    """``linear``'s computation with its weight packed once for oneDNN (CPU, float32, no autograd).

    ``keep_dense``: keep ``linear``'s weight and bias as this module's too (the LM head, tied weights);
    otherwise the packed copy is the only one and the dense memory is freed with ``linear``.
    """

    def __init__(self, linear: nn.Linear, keep_dense: bool = True) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.packed_weight = _laid_out_for_rows(linear.weight.detach())  # (out, in) in oneDNN's blocked layout
        self.packed_bias = linear.bias.detach().to_mkldnn() if linear.bias is not None else None
        if keep_dense:
            self.weight, self.bias = linear.weight, linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
        if x.requires_grad and torch.is_grad_enabled():
            raise ConfigError(
                "the target's packed Linear layers run inference only (no autograd); "
                "load the target with linear='dense' to train through it"
            )
        # Dense rows in and out, not converted to and from oneDNN's tensors on every call: SmolLM2's one-token step
        # 49.0 -> 37.9 ms of CPU, a 9-node tree verify 73.8 -> 62.9 ms on session 12's EPYC
        # (drafts/bench/results/2026-12-02-s12/cpu-speed/round-parts-int8.json).
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.packed_bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed=oneDNN"


def _laid_out_for_rows(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` in the blocked layout oneDNN's product wants for up to :data:`PACK_ROWS` rows of input.

    ``to_mkldnn()``'s plain layout (sessions 7-24) made oneDNN re-lay the weight out on every multi-row
    call. On this project's 2-core Xeon (AVX-512, one thread, SmolLM2-135M at a 300-token context, thread
    CPU time): a 9-position tree verify 104.6 -> 83.2 ms, a 5-position chain 97.6 -> 71.9 ms, one token
    63.0 -> 63.5 ms, a 300-token prefill 3 % cheaper (``drafts/bench/results/2026-12-04-s25/packed-layout/``).
    The same fp32 products, rounded as the kernel blocks them: where the input width is 576 each row of a
    verify now gets the bits it gets alone (the plain layout's rows differed in the last bits).
    """
    reorder = getattr(torch.ops.mkldnn, "_reorder_linear_weight", None)
    return weight.to_mkldnn() if reorder is None else reorder(weight, PACK_ROWS)


def pack_linear_layers(model: nn.Module) -> nn.Module:
    """Swap every ``nn.Linear`` below ``model`` (the LM head included) for a :class:`PackedLinear`."""
    _check_packable(model)
    shared = _dense_weights_to_keep(model)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                setattr(parent, name, PackedLinear(child, keep_dense=id(child.weight) in shared))
    _own_memory(model)
    return model


def _own_memory(model: nn.Module) -> None:
    """Give the tensors still held their own memory. Loaded from safetensors, every weight is a view of
    the file's memory map, which stays resident in full while any one view lives (the embeddings): for
    SmolLM2 the dropped dense weights would still cost their ~500 MB of RSS beside the packed copy."""
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            tensor.data = tensor.data.clone()


def _dense_weights_to_keep(model: nn.Module) -> set[int]:
    """ids of the weights read outside their Linear: the LM head's, and any a second module holds (tied)."""
    holders = Counter(id(p) for m in model.modules() for p in m.parameters(recurse=False))
    keep = {pid for pid, n in holders.items() if n > 1}
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    if isinstance(head, nn.Module) and isinstance(getattr(head, "weight", None), torch.Tensor):
        keep.add(id(head.weight))
    return keep


def _check_packable(model: nn.Module) -> None:
    weight = next(model.parameters())
    resolve_linear("packed", weight.device, weight.dtype)
