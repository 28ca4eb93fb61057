"""A draft's proposal kept to its top K entries: what is sampled from, and what is sent, are one thing.

Over the network the verifier needs, for each drafted token ``x``, the distribution ``q`` it was
sampled from (:mod:`drafts.acceptance`). Dense over SmolLM2's 49,152 tokens that is ~197 KB a
token in float32, a frame that on 3g holds the keepalive past its timeout. Here the draft keeps
only the K most likely entries of its distribution and rounds their probabilities to the wire's
dtype (float16 by default): ``K * (4 + 2)`` bytes a token, 192 bytes at K = 32.

The rule, in one place (:func:`truncate` builds it, :func:`normalised` reads it on both sides)::

    q'(y) = w(y) / sum_z w(z)   for y among the K kept ids, 0 elsewhere

where ``w`` are the kept probabilities *as rounded to the wire dtype*, read back in float32.

Why this is lossless. Speculative sampling (Leviathan et al. 2023, Chen et al. 2023) is exact for
ANY proposal distribution: if ``x ~ q'`` and the verifier accepts with ``min(1, p(x)/q'(x))``,
else draws from ``norm(max(p - q', 0))``, the output is distributed as ``p``:

    P(y) = q'(y) min(1, p(y)/q'(y)) + (sum_x max(q'(x) - p(x), 0)) * max(p(y) - q'(y), 0) / Z
         = min(q'(y), p(y)) + max(p(y) - q'(y), 0) = p(y)

because ``Z = sum_y max(p(y) - q'(y), 0) = sum_x max(q'(x) - p(x), 0)`` (both distributions sum
to 1). Nothing in the argument needs ``q'`` to be the draft's model distribution; it needs only
that (1) the token really was drawn from ``q'``, and (2) the verifier uses the same ``q'``. So
the client samples from :func:`normalised` of exactly the (indices, weights) it sends, and the
verifier scatters the same :func:`normalised` weights into a zero vector over its vocabulary
(:meth:`SparseProposal.dense_row`). Truncation and fp16 rounding change the proposal (a little
acceptance: the tail mass beyond the top K, typically a few percent), never the output law. A
token outside the kept K cannot be drafted (``q'(x) = 0``), and a message whose drafted token is
not among its row's kept ids with a positive weight is refused (:meth:`SparseProposal.check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from drafts.errors import MalformedFrameError

WIRE_PROB_DTYPES = (torch.float16, torch.float32)  # what the kept probabilities travel as


@dataclass(frozen=True, eq=False)  # eq=False: tensors do not compare with ==
class SparseProposal:
    """The top-K proposals of n drafted tokens: ``indices`` (n, K) int32 target-vocabulary ids,
    ``weights`` (n, K) float16/float32, each row's q' = normalised(weights) at those ids."""

    indices: torch.Tensor
    weights: torch.Tensor

    @property
    def rows(self) -> int:
        return int(self.indices.shape[0])

    def check(self, tokens: torch.Tensor) -> None:
        """Refuse a proposal that the drafted ``tokens`` (n,) cannot have been sampled from."""
        n = tokens.shape[0]
        if self.indices.dtype != torch.int32 or self.indices.ndim != 2 or self.indices.shape[0] != n:
            raise MalformedFrameError(
                f"q_indices must be int32 of shape ({n}, K), got {self.indices.dtype} {tuple(self.indices.shape)}"
            )
        if self.weights.dtype not in WIRE_PROB_DTYPES or self.weights.shape != self.indices.shape:
            raise MalformedFrameError(
                f"q_weights must be float16 or float32 of shape {tuple(self.indices.shape)}, "
                f"got {self.weights.dtype} {tuple(self.weights.shape)}"
            )
        if self.indices.shape[1] == 0 or bool((self.indices < 0).any()):
            raise MalformedFrameError("q_indices must hold at least one token id >= 0 per row")
        weights = self.weights.float()
        if not bool((torch.isfinite(weights) & (weights >= 0)).all()):
            raise MalformedFrameError("q_weights must be finite probabilities >= 0")
        ordered = self.indices.sort(dim=-1).values
        if bool((ordered.diff(dim=-1) == 0).any()):
            raise MalformedFrameError("q_indices repeat a token id in a row; send each kept id once")
        hit = (self.indices == tokens.view(-1, 1).to(torch.int32)) & (weights > 0)  # (n, K)
        if not bool(hit.any(dim=-1).all()):
            raise MalformedFrameError(
                "a drafted token is not among its q_indices with a weight > 0: it cannot have been sampled from q'; "
                "sample each token from the proposal sent with it (drafts.sparse_proposal)"
            )

    def dense_row(self, row: int, like: torch.Tensor) -> torch.Tensor:
        """q' of drafted token ``row`` over the vocabulary of ``like`` (V,): zeros but the kept ids."""
        dense = torch.zeros_like(like, dtype=torch.float32)
        index = self.indices[row].to(device=like.device, dtype=torch.int64)
        dense.scatter_(0, index, normalised(self.weights[row]).to(like.device))
        return dense.to(like.dtype)

    def dense(self, vocab: int) -> torch.Tensor:
        """(n, vocab) float32: every row's q' (tests, and any caller that wants the dense form)."""
        like = torch.zeros(vocab)
        return torch.stack([self.dense_row(i, like) for i in range(self.rows)]) if self.rows else torch.zeros(0, vocab)

    def take(self, count: int) -> SparseProposal:
        return SparseProposal(self.indices[:count], self.weights[:count])

    @classmethod
    def stack(cls, rows: list[SparseProposal]) -> SparseProposal:
        return cls(torch.cat([r.indices for r in rows]), torch.cat([r.weights for r in rows]))


def normalised(weights: torch.Tensor) -> torch.Tensor:
    """float32 q' over the kept entries: the weights as sent, divided by their sum (the one reading)."""
    w = weights.float()
    return w / w.sum(dim=-1, keepdim=True)


def truncate(
    probs: torch.Tensor, k: int, dtype: torch.dtype = torch.float16, ids: torch.Tensor | None = None
) -> SparseProposal:
    """The top-``k`` entries of one distribution ``probs`` (V,) as a 1-row proposal.

    ``ids`` (V,) maps positions of ``probs`` to target-vocabulary ids (a draft's ``d2t``); None:
    the positions are the ids. Entries that round to 0 in ``dtype`` stay (q' = 0 there: never drawn).
    """
    if dtype not in WIRE_PROB_DTYPES:
        raise ValueError(f"proposal weights travel as float16 or float32, not {dtype}")
    values, positions = torch.topk(probs.float(), min(k, probs.shape[-1]))
    mapped = positions if ids is None else ids.to(positions.device)[positions]
    return SparseProposal(mapped.to(torch.int32).cpu().view(1, -1), values.to(dtype).cpu().view(1, -1))


def sample_sparse(proposal: SparseProposal, generator: torch.Generator | None = None) -> int:
    """Draw a token id from the (1-row) proposal's q', exactly the distribution the verifier uses."""
    position = torch.multinomial(normalised(proposal.weights[0]), 1, generator=generator)
    return int(proposal.indices[0, int(position)])
