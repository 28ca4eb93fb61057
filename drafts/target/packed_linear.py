"""The target's Linear layers with oneDNN (mkldnn) prepacked weights, for CPU float32 inference.

PyTorch's dense CPU Linear re-lays-out (packs) its weight on every call with more than one row,
so on this kind of CPU a verify of 2-5 tokens cost 1.5-2x a one-token step although the weights
are read once either way. A weight packed once for oneDNN (``torch._C._nn.mkldnn_linear``) skips
that: measured on a loaded 2-core EPYC with SmolLM2-135M (300-token context, one thread, interleaved
medians): one token 248 -> 112 ms, two 367 -> 167 ms, five 506 -> 168 ms.

Opt-in (``moa-bench --packed-linear``), inference only: the packed layers have no autograd, they
keep the dense weights beside the packed copy (the drafts read the target's head and TLI reuses its
layers; a benchmark can afford the memory), and oneDNN rounds differently from the dense kernels, so
plain and speculative decoding both run packed when they are compared.
"""

from __future__ import annotations

import torch
from torch import nn

from drafts.errors import ConfigError


class PackedLinear(nn.Module):
    """``linear``'s computation with its weight packed once for oneDNN (CPU, float32, no autograd)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # kept: drafts read the head (TargetParts), ties stay
        self.packed_weight = linear.weight.detach().to_mkldnn()  # (out, in) in oneDNN's layout
        self.packed_bias = linear.bias.detach().to_mkldnn() if linear.bias is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
        rows = x.reshape(-1, self.in_features).contiguous().to_mkldnn()  # (N, in)
        y = torch._C._nn.mkldnn_linear(rows, self.packed_weight, self.packed_bias).to_dense()  # (N, out)
        return y.reshape(*x.shape[:-1], self.out_features)


def pack_linear_layers(model: nn.Module) -> nn.Module:
    """Swap every ``nn.Linear`` below ``model`` (the LM head included) for a :class:`PackedLinear`."""
    _check_packable(model)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                setattr(parent, name, PackedLinear(child))
    return model


def _check_packable(model: nn.Module) -> None:
    if not torch.backends.mkldnn.is_available():
        raise ConfigError("--packed-linear needs a PyTorch build with oneDNN (mkldnn); drop the flag")
    weight = next(model.parameters())
    if weight.device.type != "cpu" or weight.dtype != torch.float32:
        raise ConfigError(
            f"--packed-linear packs CPU float32 weights; this target is {weight.dtype} on {weight.device}: "
            "drop the flag or use --device cpu --dtype float32"
        )
