"""Verify's sparse top-K proposals (protocol version 4): round trip, size, and refusals."""

from __future__ import annotations

import pytest
import torch

from drafts.errors import ErrorCode, MalformedFrameError, ProtocolError
from drafts.protocol.codec import Limits, decode, encode
from drafts.protocol.messages import Verify
from drafts.sampling import SamplingConfig
from drafts.sparse_proposal import SparseProposal, sample_sparse, truncate
from drafts.tree import DraftTree

VOCAB = 49_152  # SmolLM2's
SAMPLED = SamplingConfig(temperature=1.0, seed=0)


def sparse_verify(nodes: int = 4, k: int = 32, seed: int = 0) -> Verify:
    """A chain of ``nodes`` tokens, each drawn from its top-``k`` float16 proposal, as the client sends it."""
    generator = torch.Generator().manual_seed(seed)
    rows, tokens = [], []
    for _ in range(nodes):
        row = truncate(torch.softmax(torch.randn(VOCAB, generator=generator) * 3, -1), k)
        rows.append(row)
        tokens.append(sample_sparse(row, generator))
    return Verify.of(7, 11, DraftTree.chain(tokens, None, SparseProposal.stack(rows)), SAMPLED)


def test_a_sparse_verify_survives_a_round_trip_bit_for_bit() -> None:
    sent = sparse_verify()
    got = decode(encode(sent), Limits())

    assert isinstance(got, Verify) and got.q is None and got.q_sparse is not None and sent.q_sparse is not None
    assert torch.equal(got.q_sparse.indices, sent.q_sparse.indices)
    assert torch.equal(got.q_sparse.weights.view(torch.int16), sent.q_sparse.weights.view(torch.int16))
    assert got.tree.q_sparse is not None and got.tree.tokens == sent.tree.tokens


def test_a_sparse_verify_costs_under_a_kilobyte_a_drafted_token() -> None:
    small, large = len(encode(sparse_verify(nodes=1))), len(encode(sparse_verify(nodes=9)))

    per_token = (large - small) / 8
    assert per_token < 1000  # dense float32 q is 4 * 49,152 = 196,608 bytes a token
    assert per_token >= 32 * (4 + 2)  # the K ids and weights really travel


def test_the_server_reads_the_proposal_the_client_sampled_from() -> None:
    sent = sparse_verify(nodes=2)
    assert sent.q_sparse is not None
    dense = sent.q_sparse.dense(VOCAB)

    for i, token in enumerate(sent.tree.tokens):
        assert dense[i, token] > 0
        assert int(torch.count_nonzero(dense[i])) <= 32
        assert float(dense[i].sum()) == pytest.approx(1.0, abs=1e-5)


def test_sparse_q_is_checked_against_the_tree_node_limit_before_anything_else() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(encode(sparse_verify(nodes=5)), Limits(max_tree_nodes=4))

    assert caught.value.code is ErrorCode.TREE_TOO_LARGE


def test_sparse_q_over_the_element_limit_is_too_large() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(encode(sparse_verify(nodes=4, k=64)), Limits(max_tensor_elements=4 * 64 - 1))

    assert caught.value.code is ErrorCode.TOO_LARGE


def _broken(**change: torch.Tensor | None) -> None:
    good = sparse_verify(nodes=2)
    fields = dict(
        request_id=1,
        root_token=2,
        tokens=good.tokens,
        parents=good.parents,
        q=None,
        sampling=SAMPLED,
        q_indices=good.q_indices,
        q_weights=good.q_weights,
    )
    Verify(**{**fields, **change})  # type: ignore[arg-type]


def test_a_drafted_token_outside_its_kept_ids_is_refused() -> None:
    good = sparse_verify(nodes=2)
    assert good.q_indices is not None
    others = good.q_indices.clone()
    others[0] = torch.where(others[0] == int(good.tokens[0]), torch.full_like(others[0], VOCAB - 1), others[0])
    if int(good.tokens[0]) == VOCAB - 1:
        pytest.skip("the drawn token is the substitute id")

    with pytest.raises(MalformedFrameError, match="cannot have been sampled"):
        _broken(q_indices=others)


def test_malformed_sparse_q_is_refused_with_the_fix() -> None:
    good = sparse_verify(nodes=2)
    assert good.q_indices is not None and good.q_weights is not None
    with pytest.raises(MalformedFrameError, match="send both or neither"):
        _broken(q_weights=None)
    with pytest.raises(MalformedFrameError, match="int32"):
        _broken(q_indices=good.q_indices.long())
    with pytest.raises(MalformedFrameError, match="repeat a token id"):
        _broken(q_indices=torch.cat([good.q_indices[:, :1], good.q_indices[:, :-1]], dim=1))
    with pytest.raises(MalformedFrameError, match=">= 0"):
        _broken(q_weights=-good.q_weights)
    with pytest.raises(MalformedFrameError, match="one form"):
        _broken(q=torch.full((2, VOCAB), 1 / VOCAB))
