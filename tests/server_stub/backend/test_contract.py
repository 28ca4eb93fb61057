"""The contract every target backend must pass (parametrised over ``conftest.BACKENDS``).

Each test drives the backend as a remote client would and compares with the target run
directly: plain greedy decoding, a full recompute of the activations, the same session alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import Drafter
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.protocol import Needs
from drafts.sampling import SamplingConfig, logits_to_probs
from drafts.target.activations import ActivationRequest, Activations
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from server_stub.backend.base import MEMORY, TargetBackend, VerifyJob, VerifyOutcome
from server_stub.errors import SessionUnknownError
from tests.drafts.test_acceptance import assert_distributed_as
from tests.server_stub.backend.conftest import SubjectFactory
from tests.server_stub.backend.remote_loop import (
    GREEDY,
    SHAPE,
    CorruptingOracle,
    committed_tokens,
    decode,
    emitted,
    open_with_prompt,
    verify_one,
)
from tests.tiny_drafts import committed as full_recompute
from tests.tiny_targets import VOCAB, random_tokens
from tests.tree_drafter import TargetTop2TreeDrafter

PROMPT = random_tokens(12, seed=5)
NEW_TOKENS = 24
RAW_KV = Needs(all_layer_kv=True)


def reference(runner: TargetRunner, prompt: list[int] = PROMPT, n: int = NEW_TOKENS) -> list[int]:
    return generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=n)).tokens


def assert_same_vectors(got: Activations, want: Activations, atol: float = 1e-5) -> None:
    assert got.hidden.keys() == want.hidden.keys()
    for layer, hidden in want.hidden.items():
        torch.testing.assert_close(got.hidden[layer], hidden, atol=atol, rtol=0)
    for name in ("kv", "memory"):
        mine, theirs = getattr(got, name), getattr(want, name)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            torch.testing.assert_close(mine, theirs, atol=atol, rtol=0)


# -- T = 0 identity -----------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ["llama", "gemma3", "mistral"])
@pytest.mark.parametrize("drafting", ["corrupting-oracle", "lookup", "top2-tree"])
def test_greedy_output_through_the_backend_equals_the_targets_own(
    make_subject: SubjectFactory, architecture: str, drafting: str
) -> None:
    subject = make_subject(architecture)
    expected = reference(subject.runner)
    drafters: dict[str, Drafter] = {
        "corrupting-oracle": CorruptingOracle(expected, seed=1),
        "lookup": PromptLookupDrafter(),
        "top2-tree": TargetTop2TreeDrafter(subject.runner),
    }

    out, _ = decode(subject.backend, "s", PROMPT, drafters[drafting], NEW_TOKENS)

    assert out[:NEW_TOKENS] == expected


# -- rollback hygiene ---------------------------------------------------------------------------


def test_no_kv_is_left_behind_after_rejected_drafts(make_subject: SubjectFactory) -> None:
    subject = make_subject()
    backend, expected = subject.backend, reference(subject.runner)
    open_with_prompt(backend, "s", PROMPT, RAW_KV)
    history, root = PROMPT[:-1], PROMPT[-1]
    top2 = TargetTop2TreeDrafter(subject.runner)
    rounds: list[Callable[[list[int]], DraftTree]] = [
        lambda context: DraftTree.chain([(expected[0] + 1) % VOCAB, expected[1], expected[2]]),  # first one wrong
        lambda context: top2.propose(context, SHAPE, GREEDY, None),  # the accepted path skips a sibling
        lambda context: DraftTree.chain([]),
        lambda context: DraftTree((1, 2, 3, 4), (0, 0, 1, 2)),
    ]

    for draft in rounds:
        tree = draft(history + [root])
        outcome = verify_one(backend, VerifyJob("s", root, tree, GREEDY))
        history += committed_tokens(root, tree, outcome)
        root = outcome.acceptance.next_token

        assert outcome.committed == len(history) == backend.committed("s") == backend.cached_tokens("s")

    open_with_prompt(backend, "fresh", history + [root], RAW_KV)  # the same history, never rejected anything
    probe = DraftTree((3, 5, 7), (0, 1, 0))
    mine = verify_one(backend, VerifyJob("s", root, probe, GREEDY))
    fresh = verify_one(backend, VerifyJob("fresh", root, probe, GREEDY))
    assert mine.acceptance == fresh.acceptance and mine.committed == fresh.committed
    assert_same_vectors(mine.vectors, fresh.vectors)


# -- vector fidelity ----------------------------------------------------------------------------


def test_returned_vectors_equal_a_full_recompute_over_the_committed_text(make_subject: SubjectFactory) -> None:
    subject = make_subject(memory=True)
    backend, runner, compressor = subject.backend, subject.runner, subject.compressor
    assert compressor is not None
    layers = (0, 2, runner.num_layers)
    raw = Needs(hidden_layers=layers, all_layer_kv=True)

    for session_id, needs in (("raw", raw), ("memory", Needs(compressed=MEMORY))):
        out, vectors = decode(backend, session_id, PROMPT, CorruptingOracle(reference(runner), seed=2), 16, needs=needs)
        tokens = (PROMPT + out)[: backend.committed(session_id)]
        expected = full_recompute(runner, tokens, ActivationRequest(layers, all_layer_kv=True))
        assert expected.kv is not None

        if needs is raw:
            got = Activations(
                {i: torch.cat([v.hidden[i] for v in vectors]) for i in layers},
                torch.cat([v.kv for v in vectors if v.kv is not None]),
            )
            assert_same_vectors(got, Activations(expected.hidden, expected.kv), atol=1e-4)
        else:
            assert all(v.kv is None and not v.hidden for v in vectors)
            memory = torch.cat([v.memory for v in vectors if v.memory is not None])
            torch.testing.assert_close(memory, compressor(expected.kv), atol=1e-4, rtol=0)


# -- batch invariance ---------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ["llama", "gemma3"])
def test_a_sessions_results_do_not_depend_on_the_sessions_batched_with_it(
    make_subject: SubjectFactory, architecture: str
) -> None:
    subject = make_subject(architecture)
    backend, expected = subject.backend, reference(subject.runner)
    others = {"short": random_tokens(2, 7), "long": random_tokens(30, 8)}
    for session_id, prompt in [("alone", PROMPT), ("twin", PROMPT), *others.items()]:
        open_with_prompt(backend, session_id, prompt, RAW_KV)
    roots = {"alone": PROMPT[-1], "short": others["short"][-1], "long": others["long"][-1]}
    alone_drafter = CorruptingOracle(expected, seed=3)
    alone_drafter.begin(PROMPT)
    other_trees = [DraftTree((1, 2, 3, 4, 5, 6), (0, 0, 1, 1, 2, 3)), DraftTree.chain([9])]
    generated: list[int] = []

    for round_index in range(6):
        tree = alone_drafter.propose(PROMPT + generated, SHAPE, GREEDY, None)
        alone = verify_one(backend, VerifyJob("alone", roots["alone"], tree, GREEDY))
        short_tree, long_tree = other_trees[round_index % 2], other_trees[(round_index + 1) % 2]
        results = backend.verify(
            [
                VerifyJob("short", roots["short"], short_tree, GREEDY),
                VerifyJob("twin", roots["alone"], tree, GREEDY),
                VerifyJob("long", roots["long"], long_tree, GREEDY),
            ]
        )
        assert all(isinstance(r, VerifyOutcome) for r in results)
        short, twin, long = results
        assert isinstance(short, VerifyOutcome) and isinstance(twin, VerifyOutcome) and isinstance(long, VerifyOutcome)

        assert twin.acceptance == alone.acceptance and twin.committed == alone.committed
        assert_same_vectors(twin.vectors, alone.vectors)
        generated += emitted(tree, alone)
        roots.update(alone=alone.acceptance.next_token, short=short.acceptance.next_token)
        roots["long"] = long.acceptance.next_token

    assert generated[: len(expected)] == expected[: len(generated)]


# -- evict / restore ----------------------------------------------------------------------------


def test_an_evicted_session_is_unknown_until_its_history_is_replayed(make_subject: SubjectFactory) -> None:
    subject = make_subject()
    backend, expected = subject.backend, reference(subject.runner)
    for session_id in ("s", "twin"):
        out, _ = decode(backend, session_id, PROMPT, CorruptingOracle(expected, seed=4), 10, needs=RAW_KV)
    history, root = (PROMPT + out)[: backend.committed("s")], out[-1]

    backend.evict("s")

    (result,) = backend.verify([VerifyJob("s", root, DraftTree.chain([1]), GREEDY)])
    assert isinstance(result, SessionUnknownError)
    for call in (lambda: backend.prefill("s", [1]), lambda: backend.committed("s"), lambda: backend.rewind("s", 3)):
        with pytest.raises(SessionUnknownError, match="replay"):
            call()
    assert backend.cached_tokens("s") == 0

    assert backend.rewind("s", 0) == 0
    assert backend.prefill("s", history).committed == len(history)
    probe = DraftTree.chain(expected[len(out) : len(out) + 3])
    restored = verify_one(backend, VerifyJob("s", root, probe, GREEDY))
    twin = verify_one(backend, VerifyJob("twin", root, probe, GREEDY))
    assert restored.acceptance == twin.acceptance and restored.committed == twin.committed
    assert_same_vectors(restored.vectors, twin.vectors)


def test_a_closed_session_is_forgotten(make_subject: SubjectFactory) -> None:
    backend = make_subject().backend
    open_with_prompt(backend, "s", PROMPT)

    backend.close("s")
    backend.close("never-opened")

    with pytest.raises(SessionUnknownError):
        backend.committed("s")
    (result,) = backend.verify([VerifyJob("s", 1, DraftTree.chain([]), GREEDY)])
    assert isinstance(result, SessionUnknownError)


def test_one_bad_job_fails_alone_and_the_rest_of_the_batch_runs(make_subject: SubjectFactory) -> None:
    subject = make_subject()
    backend = subject.backend
    open_with_prompt(backend, "s", PROMPT)

    results = backend.verify(
        [
            VerifyJob("ghost", 1, DraftTree.chain([2]), GREEDY),
            VerifyJob("s", PROMPT[-1], DraftTree.chain([]), GREEDY),
        ]
    )

    assert isinstance(results[0], SessionUnknownError)
    assert isinstance(results[1], VerifyOutcome) and results[1].acceptance.next_token == reference(subject.runner)[0]


# -- lossless sampling at T > 0 -----------------------------------------------------------------

TRIALS = 1600
SESSIONS = 8  # verified together, so the statistics also run through batched forwards
SAMPLED = SamplingConfig(temperature=1.0, top_k=5)  # 5 tokens of support: enough trials per cell


def target_distribution(runner: TargetRunner, context: list[int], cfg: SamplingConfig) -> torch.Tensor:
    session = runner.new_session()
    logits = runner.extend(session, context, last_only=True)  # (1, V)
    return logits_to_probs(logits[-1], cfg)


def sampled_chain(q: torch.Tensor, generator: torch.Generator) -> DraftTree:
    """Two tokens, each drawn from q (any proposal keeps the output lossless, as long as x ~ q)."""
    tokens = torch.multinomial(q, 2, replacement=True, generator=generator).tolist()
    return DraftTree.chain(tokens, torch.stack([q, q]))


def deterministic_tree(q: torch.Tensor, generator: torch.Generator) -> DraftTree:
    """The top 3 of q below the root, one deterministic child each (q = δ)."""
    first = torch.topk(q, 3).indices.tolist()
    return DraftTree((*first, 1, 2, 3), (0, 0, 0, 1, 2, 3))


@pytest.mark.parametrize("drafting", [sampled_chain, deterministic_tree], ids=["sampled-chain", "deterministic-tree"])
def test_sampled_tokens_through_the_backend_follow_the_targets_distribution(
    make_subject: SubjectFactory, drafting: Callable[[torch.Tensor, torch.Generator], DraftTree]
) -> None:
    subject = make_subject()
    backend: TargetBackend = subject.backend
    prompt = random_tokens(8, seed=11)
    p = target_distribution(subject.runner, prompt, SAMPLED)  # (V,) what the first new token must follow
    noise = torch.randn(VOCAB, generator=torch.Generator().manual_seed(5))
    q = logits_to_probs(torch.log(p + 1e-3) + noise, SamplingConfig(temperature=1.0, top_k=8))  # related to p, not p
    generators = [torch.Generator().manual_seed(100 + i) for i in range(SESSIONS)]
    for i in range(SESSIONS):
        open_with_prompt(backend, f"s{i}", prompt)
    firsts: Counter[int] = Counter()

    for _ in range(TRIALS // SESSIONS):
        trees = [drafting(q, generators[i]) for i in range(SESSIONS)]
        jobs = [VerifyJob(f"s{i}", prompt[-1], trees[i], SAMPLED, generators[i]) for i in range(SESSIONS)]
        for i, outcome in enumerate(backend.verify(jobs)):
            assert isinstance(outcome, VerifyOutcome)
            firsts[emitted(trees[i], outcome)[0]] += 1
            backend.rewind(f"s{i}", len(prompt) - 1)

    assert_distributed_as(firsts, p)
