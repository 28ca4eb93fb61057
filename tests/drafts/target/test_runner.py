"""The target runner against plain full forwards, on tiny random models of every supported family.

The reference for every check is the model run from scratch over the whole sequence (prompt,
then the tokens a path through the tree keeps), with no cache and no custom mask. Prompts are
longer than the 4-token sliding window of the Mistral and Gemma 3 models.
"""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, PreTrainedModel

from drafts.errors import ContextOverflowError
from drafts.target.activations import ActivationRequest
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree
from tests.tiny_targets import ARCHITECTURES, SLIDING_WINDOW, random_tokens, tiny_model, tiny_runner

ATOL = 1e-4
PROMPT = random_tokens(11, seed=1)  # longer than the sliding window
ROOT = 7
#              0 [ROOT]
#           /           \
#      1 [3]            2 [9]
#      /    \           /    \
#  3 [12]  4 [40]   5 [5]   6 [22]
#    |                |
#  7 [33]           8 [1]
TREE = DraftTree((3, 9, 12, 40, 5, 22, 33, 1), (0, 0, 1, 1, 2, 2, 3, 5))
KEEP = [0, 2, 5, 8]  # root -> node 2 -> node 5 -> node 8: skips siblings, so not a prefix of the cache
ALL = ActivationRequest(hidden_layers=(0, 1, 3), all_layer_kv=True)  # embeddings, layer 1, final


@pytest.fixture(scope="module", params=ARCHITECTURES)
def runner(request: pytest.FixtureRequest) -> TargetRunner:
    return tiny_runner(tiny_model(request.param))


def full_logits(model: PreTrainedModel, tokens: list[int]) -> torch.Tensor:
    """Logits (T, V) of one plain forward over ``tokens``."""
    with torch.inference_mode():
        return model(input_ids=torch.tensor([tokens])).logits[0].float()


def full_activations(
    model: PreTrainedModel, tokens: list[int]
) -> tuple[tuple[torch.Tensor, ...], DynamicCache]:
    """Hidden states (each (T, H)) and the cache of one plain forward over ``tokens``."""
    cache = DynamicCache()
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([tokens]), cache=cache, use_cache=True, output_hidden_states=True)
    return tuple(h[0] for h in out.hidden_states), cache


def expected_kv(cache: DynamicCache, positions: list[int]) -> torch.Tensor:
    """(m, L, 2 * n_kv * hd): per token, per layer, per KV head [K_h | V_h], built element by element."""
    layers = cache.layers
    n_kv, head_dim = layers[0].keys.shape[1], layers[0].keys.shape[3]
    out = torch.empty(len(positions), len(layers), 2 * n_kv * head_dim)
    for t, pos in enumerate(positions):
        for layer, kv in enumerate(layers):
            for head in range(n_kv):
                base = 2 * head * head_dim
                out[t, layer, base : base + head_dim] = kv.keys[0, head, pos]
                out[t, layer, base + head_dim : base + 2 * head_dim] = kv.values[0, head, pos]
    return out


def prefilled(runner: TargetRunner, prompt: list[int] = PROMPT) -> TargetSession:
    session = runner.new_session()
    runner.extend(session, prompt)
    runner.commit(session)
    return session


def path_tokens(tree: DraftTree, root: int, node: int) -> list[int]:
    return [root, *(tree.tokens[i - 1] for i in tree.path(node))]


# -- logits ----------------------------------------------------------------------------------


def test_prefill_logits_equal_a_full_forward(runner: TargetRunner) -> None:
    session = runner.new_session()

    logits = runner.extend(session, PROMPT)

    torch.testing.assert_close(logits, full_logits(runner.model, PROMPT), atol=ATOL, rtol=0)


def test_last_only_returns_the_last_positions_logits(runner: TargetRunner) -> None:
    logits = runner.extend(runner.new_session(), PROMPT, last_only=True)

    assert logits.shape == (1, 64)
    torch.testing.assert_close(logits[0], full_logits(runner.model, PROMPT)[-1], atol=ATOL, rtol=0)


def test_tree_logits_at_every_node_equal_a_full_forward_over_prompt_and_path(runner: TargetRunner) -> None:
    session = prefilled(runner)

    logits = runner.extend(session, TREE.input_ids(ROOT), tree=TREE)  # (N+1, V)

    assert logits.shape == (TREE.size + 1, 64)
    for node in range(TREE.size + 1):
        expected = full_logits(runner.model, PROMPT + path_tokens(TREE, ROOT, node))[-1]
        torch.testing.assert_close(logits[node], expected, atol=ATOL, rtol=0, msg=f"node {node}")


def test_a_chain_given_as_a_tree_matches_a_full_forward(runner: TargetRunner) -> None:
    session = prefilled(runner)
    chain = DraftTree.chain([4, 50, 8])

    logits = runner.extend(session, chain.input_ids(ROOT), tree=chain)

    expected = full_logits(runner.model, PROMPT + [ROOT, 4, 50, 8])[len(PROMPT) :]
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("runner", ["mistral", "gemma3"], indirect=True)
def test_the_sliding_window_matters_for_these_prompts(runner: TargetRunner) -> None:
    # Guards the tests above: a mask blind to the window would give other logits.
    session = runner.new_session()
    full_mask_logits = runner.model(
        input_ids=torch.tensor([PROMPT]),
        attention_mask=torch.ones(1, 1, len(PROMPT), len(PROMPT), dtype=torch.bool).tril(),
    ).logits[0, -1]

    assert len(PROMPT) > SLIDING_WINDOW
    assert not torch.allclose(runner.extend(session, PROMPT)[-1], full_mask_logits, atol=1e-2)


# -- commit, continue, truncate ------------------------------------------------------------------


def test_after_committing_a_non_contiguous_path_decoding_continues_as_a_full_recompute(
    runner: TargetRunner,
) -> None:
    session = prefilled(runner)
    runner.extend(session, TREE.input_ids(ROOT), tree=TREE)
    runner.commit(session, KEEP)
    kept = [ROOT, *(TREE.tokens[i - 1] for i in KEEP[1:])]
    assert session.length == len(PROMPT) + len(KEEP)

    chain_logits = runner.extend(session, [17, 2, 60])
    runner.commit(session)
    second = DraftTree((6, 6, 30), (0, 0, 2))
    tree_logits = runner.extend(session, second.input_ids(44), tree=second)

    context = PROMPT + kept + [17, 2, 60]
    torch.testing.assert_close(chain_logits, full_logits(runner.model, context)[-3:], atol=ATOL, rtol=0)
    for node in range(second.size + 1):
        expected = full_logits(runner.model, context + path_tokens(second, 44, node))[-1]
        torch.testing.assert_close(tree_logits[node], expected, atol=ATOL, rtol=0, msg=f"node {node}")


def test_commit_returns_the_hidden_states_and_kv_of_a_full_recompute_for_the_kept_tokens(
    runner: TargetRunner,
) -> None:
    session = runner.new_session()
    runner.extend(session, PROMPT, ALL)
    prompt_acts = runner.commit(session, None, ALL)
    runner.extend(session, TREE.input_ids(ROOT), ALL, tree=TREE)
    acts = runner.commit(session, KEEP, ALL)

    kept = [ROOT, *(TREE.tokens[i - 1] for i in KEEP[1:])]
    hidden, cache = full_activations(runner.model, PROMPT + kept)
    prompt_pos, kept_pos = list(range(len(PROMPT))), list(range(len(PROMPT), len(PROMPT) + len(kept)))
    assert set(acts.hidden) == {0, 1, 3}
    for layer in (0, 1, 3):
        torch.testing.assert_close(prompt_acts.hidden[layer], hidden[layer][prompt_pos], atol=ATOL, rtol=0)
        torch.testing.assert_close(acts.hidden[layer], hidden[layer][kept_pos], atol=ATOL, rtol=0)
    torch.testing.assert_close(prompt_acts.kv, expected_kv(cache, prompt_pos), atol=ATOL, rtol=0)
    torch.testing.assert_close(acts.kv, expected_kv(cache, kept_pos), atol=ATOL, rtol=0)


def test_the_last_hidden_state_is_the_one_the_lm_head_reads(runner: TargetRunner) -> None:
    session = runner.new_session()
    request = ActivationRequest(hidden_layers=(runner.num_layers,))
    logits = runner.extend(session, PROMPT, request)
    acts = runner.commit(session, None, request)

    head_logits = runner.model.lm_head(acts.hidden[runner.num_layers]).float()
    softcap = getattr(runner.config, "final_logit_softcapping", None)
    if softcap:
        head_logits = torch.tanh(head_logits / softcap) * softcap
    torch.testing.assert_close(head_logits, logits, atol=ATOL, rtol=0)


def test_commit_without_a_request_returns_no_activations(runner: TargetRunner) -> None:
    session = runner.new_session()
    runner.extend(session, PROMPT)

    acts = runner.commit(session)

    assert acts.hidden == {} and acts.kv is None
    assert (session.length, session.pending) == (len(PROMPT), 0)


def test_committing_nothing_drops_every_pending_position(runner: TargetRunner) -> None:
    session = prefilled(runner)
    runner.extend(session, [1, 2, 3])
    runner.commit(session, [])

    logits = runner.extend(session, [4])

    assert session.length == len(PROMPT)
    torch.testing.assert_close(logits[-1], full_logits(runner.model, PROMPT + [4])[-1], atol=ATOL, rtol=0)


def test_truncate_forgets_the_tail_and_decoding_continues_from_the_cut(runner: TargetRunner) -> None:
    session = prefilled(runner)
    runner.extend(session, [5, 6])  # pending tokens are forgotten too

    session.truncate(8)
    logits = runner.extend(session, [30, 31])

    assert session.length == 8
    expected = full_logits(runner.model, PROMPT[:8] + [30, 31])[-2:]
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)


def test_truncate_beyond_the_committed_tokens_is_refused(runner: TargetRunner) -> None:
    session = prefilled(runner)

    with pytest.raises(ValueError, match="only 11 tokens are committed"):
        session.truncate(12)


def test_extending_twice_without_a_commit_is_refused(runner: TargetRunner) -> None:
    session = runner.new_session()
    runner.extend(session, PROMPT)

    with pytest.raises(RuntimeError, match="commit"):
        runner.extend(session, [1])


# -- context ---------------------------------------------------------------------------------


def test_the_context_length_is_the_models_max_position_embeddings(runner: TargetRunner) -> None:
    assert runner.context_length == 128


def test_exceeding_the_context_raises_a_context_overflow_error(runner: TargetRunner) -> None:
    session = runner.new_session()
    runner.extend(session, random_tokens(120, seed=2))
    runner.commit(session)

    with pytest.raises(ContextOverflowError, match="129 tokens exceed tiny-.*context of 128"):
        runner.extend(session, random_tokens(9, seed=3))
    logits = runner.extend(session, random_tokens(8, seed=3))  # exactly full still fits

    assert logits.shape[0] == 8


def test_kv_rows_are_the_all_layer_kv_a_commit_returned_for_them(runner: TargetRunner) -> None:
    session = runner.new_session()
    runner.extend(session, PROMPT[:5])
    runner.commit(session)
    runner.extend(session, PROMPT[5:], ALL)
    committed = runner.commit(session, None, ALL)

    assert committed.kv is not None and torch.equal(session.kv_rows(5, len(PROMPT) - 5), committed.kv)
    with pytest.raises(ValueError, match="not committed"):
        session.kv_rows(5, len(PROMPT))


def test_a_padded_batch_gives_each_sequence_the_activations_of_a_full_forward_over_it_alone(
    runner: TargetRunner,
) -> None:
    short, long = PROMPT[:6], PROMPT + [17, 2, 60]  # the short one padded by 8 positions

    acts = runner.prefill_activations([short, long], ALL)

    for tokens, got in zip((short, long), acts, strict=True):
        hidden, cache = full_activations(runner.model, tokens)
        positions = list(range(len(tokens)))
        assert set(got.hidden) == {0, 1, 3}
        for layer in (0, 1, 3):
            torch.testing.assert_close(got.hidden[layer], hidden[layer], atol=ATOL, rtol=0)
        torch.testing.assert_close(got.kv, expected_kv(cache, positions), atol=ATOL, rtol=0)


def test_a_batch_asking_for_hidden_states_only_returns_no_kv(runner: TargetRunner) -> None:
    acts = runner.prefill_activations([PROMPT[:3], PROMPT], ActivationRequest(hidden_layers=(runner.num_layers,)))

    assert [a.kv for a in acts] == [None, None]
    assert [a.hidden[runner.num_layers].shape[0] for a in acts] == [3, len(PROMPT)]
