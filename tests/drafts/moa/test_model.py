"""The MoA draft on a tiny random Llama: what its cross-attention may see, and inference = training.

Training runs the draft over a whole sequence in one pass, with masks that simulate decoding;
inference runs it token by token from caches. The two must compute the same function, or a
draft trained one way is evaluated another.
"""

from __future__ import annotations

import pytest
import torch

from drafts.moa import model as moa_model
from drafts.moa.config import MoAConfig
from drafts.moa.masks import cross_attention_mask, self_attention_mask, verification_starts
from drafts.moa.model import MoADraft
from drafts.neural.base import TrainBatch
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed, random_draft, target_batch, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

PROMPT_LEN, LENGTH, PERIOD = 6, 24, 6  # verified: 0..5, then 6, 12, 18
TOKENS = random_tokens(LENGTH, seed=3)
LOSS_MASK = [False] * PROMPT_LEN + [True] * (LENGTH - PROMPT_LEN)
ATOL = 1e-5


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


def grouped_query_config(runner: TargetRunner) -> dict[str, object]:
    """A MoA with several (grouped) heads in every attention (the tiny default has one head each)."""
    return MoAConfig(
        target_layers=runner.num_layers,
        kv_width=64,
        hidden=64,
        lsa_heads=4,
        lsa_kv_heads=2,
        lsa_intermediate=96,
        heads=4,
        kv_heads=2,
        intermediate=96,
    ).to_dict()


@pytest.fixture(scope="module", params=["default", "grouped-query"])
def draft(request: pytest.FixtureRequest, runner: TargetRunner) -> MoADraft:
    config = grouped_query_config(runner) if request.param == "grouped-query" else None
    model = random_draft("moa", runner, seed=1, config=config)
    assert isinstance(model, MoADraft)
    return model


@pytest.fixture
def fixed_period(monkeypatch: pytest.MonkeyPatch) -> torch.Tensor:
    """Every sequence verifies every PERIOD tokens; returns the starts of the test sequence."""
    monkeypatch.setattr(
        moa_model, "sample_periods", lambda batch, generator=None, period_range=None: torch.full((batch,), PERIOD)
    )
    return verification_starts(torch.tensor([LOSS_MASK]), torch.tensor([PERIOD]))[0]


def with_kv(batch: TrainBatch, kv: torch.Tensor) -> TrainBatch:
    return TrainBatch(batch.ids, batch.loss_mask, batch.target_hidden, kv)


def predict(model: MoADraft, batch: TrainBatch, progress: float) -> torch.Tensor:
    with torch.no_grad():
        return model.predict(batch, progress, torch.Generator().manual_seed(0))[0]  # (T, H)


# -- the T-step bound ------------------------------------------------------------------------


@pytest.mark.parametrize("progress", [0.0, 1.0], ids=["staircase", "causal"])
def test_no_prediction_reads_target_state_past_its_last_verified_position(
    runner: TargetRunner, draft: MoADraft, fixed_period: torch.Tensor, progress: float
) -> None:
    batch = target_batch(runner, TOKENS, LOSS_MASK)
    clean = predict(draft, batch, progress)
    generator = torch.Generator().manual_seed(7)
    for i in range(1, LENGTH):
        start = int(fixed_period[i])
        kv = batch.target_kv.clone()
        kv[:, start + 1 :] += 100 * torch.randn(kv[:, start + 1 :].shape, generator=generator)

        noisy = predict(draft, with_kv(batch, kv), progress)

        assert torch.allclose(noisy[i], clean[i], atol=ATOL), f"position {i} (start {start}) read later target state"


@pytest.mark.parametrize("progress", [0.0, 1.0], ids=["staircase", "causal"])
def test_every_prediction_reads_the_target_state_of_its_last_verified_position(
    runner: TargetRunner, draft: MoADraft, fixed_period: torch.Tensor, progress: float
) -> None:
    batch = target_batch(runner, TOKENS, LOSS_MASK)
    clean = predict(draft, batch, progress)
    for start in sorted(set(fixed_period.tolist())):
        kv = batch.target_kv.clone()
        kv[:, start] += 100 * torch.randn(kv[:, start].shape, generator=torch.Generator().manual_seed(start))

        noisy = predict(draft, with_kv(batch, kv), progress)

        reads = fixed_period >= start
        changed = (noisy - clean).abs().amax(dim=-1) > 1e-3  # (T,)
        assert changed[reads].all(), f"perturbing position {start} left positions that see it unchanged"
        assert not changed[~reads].any()


# -- inference = training ---------------------------------------------------------------------


def parallel_logits(model: MoADraft, tokens: list[int], kv: torch.Tensor, context: int) -> torch.Tensor:
    """The training computation over ``tokens`` with the target state of the first ``context``
    tokens (``kv`` rows past it are garbage) for every later position, causal self-attention."""
    T = len(tokens)
    starts = torch.tensor([[max(0, j - 1) if j < context else context - 1 for j in range(T)]])  # (1, T)
    garbage = 1e3 * torch.randn(T - context, *kv.shape[1:], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        rope = model._rope(torch.arange(T)[None])
        e = model.parts.embed_tokens(torch.tensor([tokens]))  # (1, T, H)
        s = model.self_attention(e, rope, self_attention_mask(starts, torch.tensor([False])))
        k, v = model.cross_attention.memory_kv(model.compress(torch.cat([kv, garbage])[None]), rope)
        out = model.cross_attention(s, rope, k, v, cross_attention_mask(starts))  # (1, T, H)
        return model.parts.logits(out[0, context:])


def chain_logits(model: MoADraft, drafted: list[int], position: int) -> torch.Tensor:
    """Step the drafted tokens one at a time from ``position`` on (then forget them)."""
    rows = []
    for depth, token in enumerate(drafted):
        logits, _ = model.step(torch.tensor([token]), torch.tensor([position + depth]), None, None)
        rows.append(logits[0])
    model.end_round()
    return torch.stack(rows)


def test_drafting_step_by_step_equals_the_parallel_training_computation(runner: TargetRunner, draft: MoADraft) -> None:
    prompt, drafted = TOKENS[:10], [5, 17, 33, 2]  # the root, then three drafted tokens
    acts = committed(runner, prompt, draft.needs)
    draft.reset()
    draft.observe(prompt, 0, acts)

    stepped = chain_logits(draft, drafted, len(prompt))

    assert acts.kv is not None
    expected = parallel_logits(draft, prompt + drafted, acts.kv, len(prompt))
    assert torch.allclose(stepped, expected, atol=ATOL)


def test_observing_in_several_rounds_equals_observing_once(runner: TargetRunner, draft: MoADraft) -> None:
    prompt, accepted, drafted = TOKENS[:7], TOKENS[7:10], [5, 17, 33]
    session = runner.new_session()
    runner.extend(session, prompt, draft.needs)
    first = runner.commit(session, None, draft.needs)
    runner.extend(session, accepted, draft.needs)
    second = runner.commit(session, None, draft.needs)
    draft.reset()
    draft.observe(prompt, 0, first)
    draft.observe(accepted, len(prompt), second)

    stepped = chain_logits(draft, drafted, len(prompt) + len(accepted))

    assert first.kv is not None and second.kv is not None
    kv = torch.cat([first.kv, second.kv])
    expected = parallel_logits(draft, prompt + accepted + drafted, kv, len(prompt) + len(accepted))
    assert torch.allclose(stepped, expected, atol=ATOL)


def test_the_drafted_logits_depend_on_the_observed_target_state(runner: TargetRunner, draft: MoADraft) -> None:
    prompt, drafted = TOKENS[:10], [5, 17]
    acts = committed(runner, prompt, draft.needs)
    assert acts.kv is not None
    draft.reset()
    draft.observe(prompt, 0, acts)
    before = chain_logits(draft, drafted, len(prompt))
    draft.reset()
    draft.observe(prompt, 0, Activations(kv=acts.kv + 1.0))

    after = chain_logits(draft, drafted, len(prompt))

    assert not torch.allclose(before, after, atol=1e-3)  # the memory is the target state
