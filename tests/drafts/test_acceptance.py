"""Acceptance: greedy cases by hand, and statistical losslessness of the stochastic rules.

The statistical tests decode two tokens from a toy "language model" over V = 6 tokens whose
logits at every prefix are fixed random numbers (``target_logits``), drafting with a different
toy model (``draft_probs``). Whatever the drafting scheme, the tokens that come out must be
distributed as the target's: the first as p(. | root), the second, given the first, as
p(. | first). A chi-square goodness-of-fit statistic checks both at the 0.001 level, so a
correct rule fails a seeded run with probability 1/1000 per check.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable
from functools import cache

import pytest
import torch

from drafts.acceptance import Acceptance, accept_chain, accept_tree
from drafts.sampling import SamplingConfig, logits_to_probs
from drafts.sparse_proposal import SparseProposal, sample_sparse, truncate
from drafts.tree import DraftTree

V = 6
GREEDY = SamplingConfig(temperature=0.0)
PLAIN = SamplingConfig(temperature=1.0)
TRIALS = 8_000  # ~2 s per check on one slow core; enough to see any real bias at the 0.001 level
# Upper 0.001 quantiles of the chi-square distribution, by degrees of freedom.
CHI2_CRITICAL_0_001 = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515}


def one_hot_logits(argmaxes: list[int], vocab: int = V) -> torch.Tensor:
    """Logits (len, vocab) whose row i has its maximum at ``argmaxes[i]``."""
    logits = torch.zeros(len(argmaxes), vocab)
    logits[torch.arange(len(argmaxes)), torch.tensor(argmaxes)] = 5.0
    return logits


# -- greedy, by hand ---------------------------------------------------------------------


def test_greedy_chain_fully_accepted_ends_with_the_bonus_token() -> None:
    # target after [root, 3, 1, 4]: 3, 1, 4, then 5
    acc = accept_chain([3, 1, 4], None, one_hot_logits([3, 1, 4, 5]), GREEDY)

    assert acc == Acceptance(path=(1, 2, 3), next_token=5)
    assert acc.accepted == 3


def test_greedy_chain_stops_at_the_first_mismatch_with_the_targets_correction() -> None:
    acc = accept_chain([3, 2, 4], None, one_hot_logits([3, 1, 4, 5]), GREEDY)

    assert acc == Acceptance(path=(1,), next_token=1)


def test_greedy_chain_rejected_at_once_emits_the_targets_argmax_at_the_root() -> None:
    acc = accept_chain([0, 1], None, one_hot_logits([2, 1, 0]), GREEDY)

    assert acc == Acceptance(path=(), next_token=2)


def test_greedy_empty_draft_emits_the_argmax_at_the_root() -> None:
    assert accept_chain([], None, one_hot_logits([4]), GREEDY) == Acceptance((), 4)


def test_greedy_tree_follows_whichever_sibling_is_the_argmax() -> None:
    #          0
    #       /     \
    #    1 [2]    2 [3]        target: root -> 3, node 2 -> 1, node 5 -> 0
    #    /  \       |  \
    # 3 [0] 4 [1] 5 [1] 6 [4]
    tree = DraftTree((2, 3, 0, 1, 1, 4), (0, 0, 1, 1, 2, 2))
    target = one_hot_logits([3, 5, 1, 5, 5, 0, 5])

    assert accept_tree(tree, target, GREEDY) == Acceptance(path=(2, 5), next_token=0)


def test_greedy_tree_with_no_matching_child_emits_the_argmax() -> None:
    tree = DraftTree((2, 3), (0, 0))

    assert accept_tree(tree, one_hot_logits([4, 0, 0]), GREEDY) == Acceptance((), 4)


def test_greedy_ignores_the_draft_distribution() -> None:
    q = torch.full((2, V), 1 / V)

    assert accept_chain([3, 1], q, one_hot_logits([3, 1, 2]), GREEDY) == Acceptance((1, 2), 2)


# -- stochastic, exact cases ---------------------------------------------------------------


def test_a_draft_identical_to_the_target_is_always_accepted() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(4, V, generator=generator)
    p = torch.softmax(logits, -1)
    for _ in range(200):
        tokens = [int(torch.multinomial(p[i], 1, generator=generator)) for i in range(3)]
        acc = accept_chain(tokens, p[:3], logits, PLAIN, generator)
        assert acc.path == (1, 2, 3)


def test_a_candidate_the_target_rules_out_is_never_accepted() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.tensor([[4.0, 3.0, -1.0, -2.0, -3.0, -4.0]])  # top-2 leaves only tokens 0 and 1
    cfg = SamplingConfig(temperature=1.0, top_k=2)
    for _ in range(200):
        acc = accept_tree(DraftTree((5,), (0,)), torch.cat([logits, logits]), cfg, generator)
        assert acc.path == () and acc.next_token in (0, 1)


def test_a_candidate_the_target_is_sure_of_is_always_accepted() -> None:
    logits = torch.tensor([[0.0, 0.0, 50.0, 0.0, 0.0, 0.0]] * 2)

    for seed in range(50):
        acc = accept_tree(DraftTree((2,), (0,)), logits, PLAIN, torch.Generator().manual_seed(seed))
        assert acc.path == (1,)


# -- stochastic, statistical losslessness ----------------------------------------------------


def stable_seed(role: str, prefix: tuple[int, ...]) -> int:
    """A seed fixed by ``role`` and ``prefix`` in every process: Python's ``hash`` of a str changes per process
    (PYTHONHASHSEED), which made the toy target a new random problem on each run and the 0.001-level checks flaky."""
    return zlib.crc32(repr((role, prefix)).encode())


@cache
def target_logits(prefix: tuple[int, ...]) -> torch.Tensor:
    """The toy target's fixed random logits (V,) after ``prefix``."""
    return 1.2 * torch.randn(V, generator=torch.Generator().manual_seed(stable_seed("target", prefix)))


@cache
def draft_probs(prefix: tuple[int, ...], cfg: SamplingConfig) -> torch.Tensor:
    """The toy draft's q (V,): related to the target's p, but clearly not equal."""
    noise = torch.randn(V, generator=torch.Generator().manual_seed(stable_seed("draft", prefix)))
    return logits_to_probs(0.5 * target_logits(prefix) + noise, cfg)


@cache
def tree_target_logits(prefix: tuple[int, ...], tokens: tuple[int, ...], parents: tuple[int, ...]) -> torch.Tensor:
    """The target's logits (N+1, V) at [root, node 1..N] of a tree drafted after ``prefix``."""
    contexts = [prefix]
    for token, parent in zip(tokens, parents, strict=True):
        contexts.append((*contexts[parent], token))
    return torch.stack([target_logits(c) for c in contexts])


Drafting = Callable[[tuple[int, ...], SamplingConfig, torch.Generator], DraftTree]


def sampled_chain(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """A chain of 2 tokens, each sampled from the draft's q (Leviathan et al.)."""
    q1 = draft_probs(prefix, cfg)
    t1 = int(torch.multinomial(q1, 1, generator=generator))
    q2 = draft_probs((*prefix, t1), cfg)
    t2 = int(torch.multinomial(q2, 1, generator=generator))
    return DraftTree.chain([t1, t2], torch.stack([q1, q2]))


def sparse_chain(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """A chain of 2 tokens, each sampled from the draft's q kept to its top 3 of 6 in float16 (q',
    as the client sends it over the wire), verified with that sparse q'."""
    r1 = truncate(draft_probs(prefix, cfg), 3)
    t1 = sample_sparse(r1, generator)
    r2 = truncate(draft_probs((*prefix, t1), cfg), 3)
    t2 = sample_sparse(r2, generator)
    return DraftTree.chain([t1, t2], None, SparseProposal.stack([r1, r2]))


def top_k_tree(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """The draft's top-2 below the root and top-2 below each of those: deterministic, q = None."""
    return _top_k_tree(prefix, cfg)


@cache
def _top_k_tree(prefix: tuple[int, ...], cfg: SamplingConfig) -> DraftTree:
    first = torch.topk(draft_probs(prefix, cfg), 2).indices.tolist()
    tokens = [*first]
    for token in first:
        tokens += torch.topk(draft_probs((*prefix, token), cfg), 2).indices.tolist()
    return DraftTree(tuple(tokens), (0, 0, 1, 1, 2, 2))


def iid_tree(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """Two children sampled i.i.d. from q below the root and below each child (SpecInfer)."""
    q_root = draft_probs(prefix, cfg)
    first = torch.multinomial(q_root, 2, replacement=True, generator=generator).tolist()
    tokens, qs = [*first], [q_root, q_root]
    for token in first:
        q = draft_probs((*prefix, token), cfg)
        tokens += torch.multinomial(q, 2, replacement=True, generator=generator).tolist()
        qs += [q, q]
    return DraftTree(tuple(tokens), (0, 0, 1, 1, 2, 2), torch.stack(qs))


def decode_two_tokens(draft: Drafting, cfg: SamplingConfig, generator: torch.Generator) -> tuple[int, int]:
    """Speculative decoding of the toy target until two tokens are out."""
    out: list[int] = []
    while len(out) < 2:
        prefix = tuple(out)
        tree = draft(prefix, cfg, generator)
        acc = accept_tree(tree, tree_target_logits(prefix, tree.tokens, tree.parents), cfg, generator)
        out += [tree.tokens[i - 1] for i in acc.path] + [acc.next_token]
    return out[0], out[1]


def chi_square(counts: Counter[int], probs: torch.Tensor) -> tuple[float, int]:
    """Pearson's statistic of ``counts`` against ``probs`` over the support, and its degrees of freedom.

    A count outside the support makes the statistic infinite.
    """
    total = sum(counts.values())
    support = torch.nonzero(probs).flatten().tolist()
    if any(token not in support for token in counts):
        return float("inf"), len(support) - 1
    expected = {t: total * float(probs[t]) for t in support}
    assert min(expected.values()) >= 5, "too few trials for the chi-square approximation"
    stat = sum((counts.get(t, 0) - e) ** 2 / e for t, e in expected.items())
    return stat, len(support) - 1


def assert_distributed_as(counts: Counter[int], probs: torch.Tensor) -> None:
    stat, dof = chi_square(counts, probs)
    assert stat < CHI2_CRITICAL_0_001[dof], f"chi2 = {stat:.1f} on {dof} dof; counts {sorted(counts.items())}"


def assert_lossless(draft: Drafting, cfg: SamplingConfig, seed: int, trials: int = TRIALS) -> None:
    """First token ~ p(. | root); second token given the likeliest first ~ p(. | first)."""
    generator = torch.Generator().manual_seed(seed)
    pairs = [decode_two_tokens(draft, cfg, generator) for _ in range(trials)]
    p_root = logits_to_probs(target_logits(()), cfg)
    assert_distributed_as(Counter(first for first, _ in pairs), p_root)
    given = int(p_root.argmax())
    p_next = logits_to_probs(target_logits((given,)), cfg)
    assert_distributed_as(Counter(second for first, second in pairs if first == given), p_next)


def test_the_chi_square_check_catches_a_sampler_that_ignores_the_target() -> None:
    # The same check must fail when tokens come from the draft's q instead of the target's p.
    q, p = draft_probs((), PLAIN), torch.softmax(target_logits(()), -1)
    drawn = torch.multinomial(q, TRIALS, replacement=True, generator=torch.Generator().manual_seed(0))

    stat, dof = chi_square(Counter(drawn.tolist()), p)

    assert stat > 10 * CHI2_CRITICAL_0_001[dof]


def test_a_chain_sampled_from_q_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(sampled_chain, PLAIN, seed=1)


def test_a_chain_sampled_from_a_sparse_fp16_top_k_proposal_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(sparse_chain, PLAIN, seed=6)


def test_a_sparse_proposal_is_its_top_k_renormalised_and_zero_elsewhere() -> None:
    q = draft_probs((), PLAIN)
    proposal = truncate(q, 3)
    dense = proposal.dense(V)[0]
    kept = torch.topk(q, 3).indices

    assert set(torch.nonzero(dense).flatten().tolist()) == set(kept.tolist())
    assert torch.allclose(dense[kept], q[kept] / q[kept].sum(), atol=1e-3)  # float16 rounding, renormalised
    assert float(dense.sum()) == pytest.approx(1.0, abs=1e-6)


def test_a_deterministic_top_k_tree_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(top_k_tree, PLAIN, seed=2)


def test_a_tree_of_iid_samples_from_q_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(iid_tree, PLAIN, seed=3)


@pytest.mark.parametrize("draft", [sampled_chain, iid_tree], ids=["chain", "iid-tree"])
def test_temperature_and_top_k_shape_the_target_as_they_shape_the_draft(draft: Drafting) -> None:
    # Tokens outside the target's top-4 must never appear; the rest follow the tempered top-4.
    cfg = SamplingConfig(temperature=0.7, top_k=4)

    assert_lossless(draft, cfg, seed=4, trials=TRIALS // 2)
