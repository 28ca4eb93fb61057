"""Invariant checks shared by the protocol's messages: each raises MalformedFrameError naming the fix."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from drafts.errors import MalformedFrameError
from drafts.sparse_proposal import SparseProposal

TOKEN_DTYPES = (torch.int64,)  # token ids, tree indices: torch's index dtype
PROB_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
ACTIVATION_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8)

# -- checks --------------------------------------------------------------------------------------

MAX_INT = 2**53 - 1  # the largest int every JSON peer reads exactly


def require_non_negative(where: str, **values: int) -> None:
    for name, value in values.items():
        if not 0 <= value <= MAX_INT:
            raise MalformedFrameError(f"{where}.{name} must be an int in [0, 2**53), got {value}")


def require_positive(where: str, **values: int) -> None:
    for name, value in values.items():
        if not 0 < value <= MAX_INT:
            raise MalformedFrameError(f"{where}.{name} must be an int in [1, 2**53), got {value}")


def require_tensor(
    where: str, tensor: torch.Tensor, dtypes: tuple[torch.dtype, ...], shape: tuple[int | None, ...]
) -> None:
    """``tensor`` has one of ``dtypes`` and ``shape`` (None matches any size)."""
    if tensor.dtype not in dtypes:
        names = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise MalformedFrameError(f"{where} must be {names}, got {str(tensor.dtype).removeprefix('torch.')}")
    if tensor.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, tensor.shape, strict=True)):
        want = ", ".join("*" if s is None else str(s) for s in shape)
        raise MalformedFrameError(f"{where} must have shape ({want}), got {tuple(tensor.shape)}")


def require_tokens(where: str, tokens: torch.Tensor) -> None:
    require_tensor(where, tokens, TOKEN_DTYPES, (None,))
    if bool((tokens < 0).any()):
        raise MalformedFrameError(f"{where} holds negative token ids")


def require_tree(
    where: str, tokens: torch.Tensor, parents: torch.Tensor, q: torch.Tensor | None, q_sparse: SparseProposal | None
) -> None:
    """A draft tree as Verify and Propose carry it (:mod:`drafts.tree`), with at most one form of q."""
    require_tokens(f"{where}.tokens", tokens)
    require_tensor(f"{where}.parents", parents, TOKEN_DTYPES, (tokens.shape[0],))
    above = torch.arange(parents.shape[0])  # (N,) parents[i] must be in [0, i]
    if bool(((parents < 0) | (parents > above)).any()):
        raise MalformedFrameError(f"{where}.parents[i] must be in [0, i]: list parents before their children")
    if q is not None:
        require_tensor(f"{where}.q", q, PROB_DTYPES, (tokens.shape[0], None))
        if q.shape[1] == 0 or not bool(((q >= 0) & torch.isfinite(q)).all()):
            raise MalformedFrameError(f"{where}.q must hold finite probabilities >= 0 over a non-empty vocabulary")
    if q_sparse is not None:
        if q is not None:
            raise MalformedFrameError(f"{where} carries q both dense and sparse; send one form")
        q_sparse.check(tokens)


def require_activations(where: str, activations: Mapping[str, torch.Tensor], rows: int | None) -> None:
    """Activation tensors share their first dimension (one row per token), ``rows`` if given."""
    for name, tensor in activations.items():
        if tensor.dtype not in ACTIVATION_DTYPES or tensor.ndim == 0:
            raise MalformedFrameError(
                f"{where}.activations[{name!r}] must be a float or int8 tensor with a token dimension, "
                f"got {str(tensor.dtype).removeprefix('torch.')} of shape {tuple(tensor.shape)}"
            )
        rows = tensor.shape[0] if rows is None else rows
        if tensor.shape[0] != rows:
            raise MalformedFrameError(
                f"{where}.activations[{name!r}] has {tensor.shape[0]} rows, expected {rows}: one per committed token"
            )
