"""The transformers backend beyond the contract: its limits, its checks and its KV memory budget."""

from __future__ import annotations

import pytest
import torch

from drafts.protocol import Needs
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.backend.base import MEMORY, VerifyJob, VerifyOutcome
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from server_stub.errors import (
    ContextLimitError,
    DraftUnsupportedError,
    InvalidRequestError,
    RewindOutOfRangeError,
    SessionUnknownError,
    TreeLimitError,
)
from tests.tiny_drafts import tiny_llama, tiny_target_runner
from tests.tiny_targets import VOCAB, random_tokens

GREEDY = SamplingConfig()


def backend(**limits: object) -> TransformersBackend:
    return TransformersBackend(tiny_target_runner(tiny_llama()), TransformersBackendConfig(**limits))  # type: ignore[arg-type]


def opened(b: TransformersBackend, session_id: str, n: int, seed: int = 0) -> None:
    b.open(session_id, Needs())
    b.prefill(session_id, random_tokens(n, seed))


def test_capabilities_report_the_limits_and_what_it_can_send() -> None:
    caps = backend(max_context=100, max_tree_nodes=8, max_batch=4).capabilities()

    assert (caps.max_context, caps.max_tree_nodes, caps.max_batch) == (100, 8, 4)
    assert caps.batching and caps.trees and caps.lossless_sampling
    assert caps.payloads == ("hidden", "kv") and caps.memory_draft_id is None
    assert caps.to_dict()["target"]["name"] == "tiny-llama"


def test_the_context_limit_is_the_smaller_of_the_configured_one_and_the_models() -> None:
    assert backend(max_context=10**6).capabilities().max_context == 256  # tiny llama's window


def test_needs_the_backend_cannot_serve_are_refused_with_the_fix() -> None:
    b = backend()

    with pytest.raises(DraftUnsupportedError, match="--draft-checkpoint"):
        b.open("s", Needs(compressed=MEMORY))
    with pytest.raises(DraftUnsupportedError, match="hidden states 0..3"):
        b.open("s", Needs(hidden_layers=(4,)))
    with pytest.raises(DraftUnsupportedError, match="computes no 'pca'"):
        b.open("s", Needs(compressed="pca"))


def test_requests_beyond_the_context_limit_are_refused_and_change_nothing() -> None:
    b = backend(max_context=12)
    opened(b, "s", 10)

    with pytest.raises(ContextLimitError, match="context limit of 12"):
        b.prefill("s", [1, 2, 3])
    (result,) = b.verify([VerifyJob("s", 1, DraftTree.chain([2, 3]), GREEDY)])

    assert isinstance(result, ContextLimitError)
    assert b.committed("s") == b.cached_tokens("s") == 10


def test_malformed_jobs_are_refused_one_by_one() -> None:
    b = backend(max_tree_nodes=2)
    opened(b, "s", 5)
    opened(b, "t", 5)
    wide_q = torch.full((1, VOCAB + 1), 1 / (VOCAB + 1))

    results = b.verify(
        [
            VerifyJob("s", VOCAB, DraftTree.chain([1]), GREEDY),  # root outside the vocabulary
            VerifyJob("s", 1, DraftTree.chain([1, 2, 3]), GREEDY),  # over max_tree_nodes
            VerifyJob("s", 1, DraftTree.chain([1], wide_q), GREEDY),  # q over another vocabulary
            VerifyJob("t", 1, DraftTree.chain([1]), GREEDY),
            VerifyJob("t", 1, DraftTree.chain([1]), GREEDY),  # the same session twice in one batch
        ]
    )

    assert [type(r) for r in results] == [
        InvalidRequestError,
        TreeLimitError,
        InvalidRequestError,
        VerifyOutcome,
        InvalidRequestError,
    ]
    assert "vocabulary of 64" in str(results[0]) and "full vocabulary" in str(results[2])


def test_rewind_forgets_tokens_and_refuses_to_go_forward() -> None:
    b = backend()
    opened(b, "s", 8)

    assert b.rewind("s", 3) == 3
    assert b.committed("s") == b.cached_tokens("s") == 3
    with pytest.raises(RewindOutOfRangeError, match="committed 3"):
        b.rewind("s", 4)


def test_beyond_the_kv_budget_the_least_recently_used_session_is_evicted() -> None:
    one_session = backend()
    opened(one_session, "probe", 20)
    per_session = one_session.kv_bytes()
    b = backend(kv_memory_bytes=int(2.5 * per_session))
    opened(b, "a", 20, seed=1)
    opened(b, "b", 20, seed=2)
    b.committed("a")  # "a" is now more recently used than "b"

    opened(b, "c", 20, seed=3)

    assert b.kv_bytes() <= 2.5 * per_session
    with pytest.raises(SessionUnknownError, match="evicted"):
        b.committed("b")
    assert b.committed("a") == b.committed("c") == 20


def test_a_session_larger_than_the_whole_budget_still_runs() -> None:
    b = backend(kv_memory_bytes=1)
    opened(b, "a", 5)
    opened(b, "b", 5)

    outcome = b.verify([VerifyJob("b", 1, DraftTree.chain([2]), GREEDY)])[0]

    assert isinstance(outcome, VerifyOutcome)
    with pytest.raises(SessionUnknownError):
        b.committed("a")


def test_more_jobs_than_the_batch_size_run_as_several_forwards() -> None:
    b = backend(max_batch=2)
    for i in range(5):
        opened(b, f"s{i}", 4, seed=i)

    results = b.verify([VerifyJob(f"s{i}", 1, DraftTree.chain([2]), GREEDY) for i in range(5)])

    assert all(isinstance(r, VerifyOutcome) for r in results)
    assert [r.timings.batch_size for r in results if isinstance(r, VerifyOutcome)] == [2, 2, 2, 2, 1]


def test_an_empty_prefill_commits_nothing() -> None:
    b = backend()
    b.open("s", Needs(all_layer_kv=True))

    outcome = b.prefill("s", [])

    assert outcome.committed == 0 and outcome.vectors.kv is None
    (first,) = b.verify([VerifyJob("s", 3, DraftTree.chain([4]), GREEDY)])
    assert isinstance(first, VerifyOutcome) and first.committed >= 1


def unchecked(**fields: object) -> SamplingConfig:
    """A SamplingConfig that skipped validation: what a bug or an unvalidated path would hand the backend."""
    config = object.__new__(SamplingConfig)
    for name, value in {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": None, **fields}.items():
        object.__setattr__(config, name, value)
    return config


def test_a_row_whose_acceptance_fails_fails_alone_and_its_session_is_unchanged() -> None:
    b = backend()
    for i, name in enumerate(("a", "poisoned", "c")):
        opened(b, name, 8, seed=i)
    poisoned = unchecked(temperature=1e-300)  # NaN in float32: torch.multinomial raises inside acceptance
    tree = DraftTree.chain([3, 4])
    jobs = [
        VerifyJob("a", 1, tree, GREEDY),
        VerifyJob("poisoned", 1, tree, poisoned, torch.Generator().manual_seed(0)),
        VerifyJob("c", 1, tree, GREEDY),
    ]

    results = b.verify(jobs)

    assert isinstance(results[0], VerifyOutcome) and isinstance(results[2], VerifyOutcome)
    assert isinstance(results[1], InvalidRequestError) and "session is unchanged" in str(results[1])
    assert b.committed("poisoned") == b.cached_tokens("poisoned") == 8
    assert b.committed("a") == results[0].committed > 8 and b.committed("c") == results[2].committed > 8
