"""MoA's ablation options: LSA over a subset of the target's layers, and the target's final hidden
state added to the memory; both recorded in the checkpoint and rebuilt by loading it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from drafts.errors import ConfigError
from drafts.moa import model as moa_model
from drafts.moa.config import MoAConfig
from drafts.moa.model import MoADraft
from drafts.neural.checkpoint import load_draft
from drafts.neural.factory import default_config
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import save_draft
from tests.tiny_drafts import committed, random_draft, target_batch, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

TOKENS = random_tokens(16, seed=4)
ATOL = 1e-5


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


def moa(runner: TargetRunner, seed: int = 1, **fields: object) -> MoADraft:
    model = random_draft("moa", runner, seed=seed, config=default_config("moa", runner) | fields)
    assert isinstance(model, MoADraft)
    return model


def test_lsa_layers_are_spread_over_the_depth_and_end_at_the_last() -> None:
    cfg = MoAConfig.for_target(30, 384, 576)

    assert dataclasses.replace(cfg, lsa_layers=10).lsa_layer_indices() == (2, 5, 8, 11, 14, 17, 20, 23, 26, 29)
    assert dataclasses.replace(cfg, lsa_layers=1).lsa_layer_indices() == (29,)
    assert cfg.lsa_layer_indices() == tuple(range(30))  # 0: all, the paper's


def test_more_lsa_layers_than_the_target_has_are_refused() -> None:
    with pytest.raises(ConfigError, match="--lsa-layers 31"):
        dataclasses.replace(MoAConfig.for_target(30, 384, 576), lsa_layers=31)


def test_lsa_reads_only_its_layers_keys_and_values(runner: TargetRunner) -> None:
    model = moa(runner, lsa_layers=1)  # the tiny target has 3 layers: LSA reads layer 2 only
    kv = committed(runner, TOKENS).kv
    assert kv is not None
    with torch.no_grad():
        clean = model.compress(kv[None])
        other = kv.clone()
        other[:, :2] += 10.0
        later = kv.clone()
        later[:, 2] += 10.0

        assert torch.equal(model.compress(other[None]), clean)
        assert not torch.allclose(model.compress(later[None]), clean, atol=1e-3)


def test_a_final_hidden_draft_starts_out_as_the_draft_without_it(runner: TargetRunner) -> None:
    plain, extended = moa(runner), moa(runner, final_hidden=True)
    extended.load_state_dict(plain.state_dict(), strict=False)  # its projection stays at zero
    batch = target_batch(runner, TOKENS, [False] * 6 + [True] * 10)

    with torch.no_grad():
        same = [torch.Generator().manual_seed(0) for _ in range(2)]  # the same verification periods
        assert torch.equal(extended.predict(batch, 1.0, same[0]), plain.predict(batch, 1.0, same[1]))
    assert extended.needs.hidden_layers == (runner.num_layers,) and extended.needs.all_layer_kv
    assert not extended.memory_compressible()  # the verifier's memory is the K/V part alone


def test_a_final_hidden_draft_drafts_as_it_trains_and_reads_the_final_hidden_state(
    runner: TargetRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = moa(runner, final_hidden=True)
    torch.nn.init.normal_(model.final_proj.weight, std=0.3, generator=torch.Generator().manual_seed(0))
    prompt, drafted = TOKENS[:10], TOKENS[10:14]
    monkeypatch.setattr(
        moa_model, "sample_periods", lambda batch, generator=None, period_range=None: torch.full((batch,), 100)
    )
    acts = committed(runner, prompt + drafted, model.needs)  # the drafted rows are never visible in training
    batch = target_batch(runner, prompt + drafted, [False] * len(prompt) + [True] * len(drafted))
    with torch.no_grad():
        trained = model.parts.logits(model.predict(batch, 1.0, None)[0, len(prompt) :])

    def drafted_logits(hidden_shift: float) -> torch.Tensor:
        shown = acts.select(slice(0, len(prompt)))
        shown.hidden[runner.num_layers] = shown.hidden[runner.num_layers] + hidden_shift
        model.reset()
        model.observe(prompt, 0, shown)
        rows = [
            model.step(torch.tensor([t]), torch.tensor([len(prompt) + d]), None, None)[0][0]
            for d, t in enumerate(drafted)
        ]
        model.end_round()
        return torch.stack(rows)

    assert torch.allclose(drafted_logits(0.0), trained, atol=ATOL)
    assert not torch.allclose(drafted_logits(1.0), trained, atol=1e-3)


def test_the_options_are_recorded_in_the_checkpoint_and_rebuilt_by_loading_it(
    runner: TargetRunner, tmp_path: Path
) -> None:
    model = moa(runner, lsa_layers=2, final_hidden=True)
    torch.nn.init.normal_(model.final_proj.weight, std=0.3)
    save_draft(tmp_path, model, runner.fingerprint, {})

    loaded = load_draft(tmp_path, runner)

    assert isinstance(loaded, MoADraft)
    assert loaded.cfg == model.cfg and loaded.cfg.lsa_layers == 2 and loaded.cfg.final_hidden
    assert torch.equal(loaded.final_proj.weight, model.final_proj.weight.half().float())


def test_a_config_written_before_the_options_existed_still_builds(runner: TargetRunner) -> None:
    old = {k: v for k, v in default_config("moa", runner).items() if k not in ("lsa_layers", "final_hidden")}

    model = random_draft("moa", runner, config=old)

    assert isinstance(model, MoADraft)
    assert model.cfg.lsa_layers == 0 and not model.cfg.final_hidden and model.final_proj is None


def test_an_old_checkpoint_config_keeps_the_official_verification_periods_and_no_depth0() -> None:
    old = MoAConfig.for_target(30, 384, 576).to_dict()
    for name in ("period_min", "period_max", "depth0"):
        del old[name]  # a config written before these fields existed

    cfg = MoAConfig(**old)

    assert (cfg.period_min, cfg.period_max, cfg.depth0) == (6, 14, False)


def test_a_reversed_verification_period_range_is_refused_with_the_flag_to_fix() -> None:
    with pytest.raises(ConfigError, match="--verify-period 9-4"):
        dataclasses.replace(MoAConfig.for_target(30, 384, 576), period_min=9, period_max=4)


def test_heads_that_do_not_divide_the_width_are_refused() -> None:
    with pytest.raises(ConfigError, match="does not divide evenly"):
        dataclasses.replace(MoAConfig.for_target(30, 384, 576), heads=7)


def test_the_training_options_change_the_masks_not_the_weights_or_inference(
    runner: TargetRunner, tmp_path: Path
) -> None:
    plain, official = moa(runner), moa(runner, period_min=2, period_max=3, depth0=True)
    official.load_state_dict(plain.state_dict(), strict=True)  # the same weights: nothing new to train
    batch = target_batch(runner, TOKENS, [False] * 4 + [True] * 12)
    with torch.no_grad():
        a = plain.predict(batch, 1.0, torch.Generator().manual_seed(0))
        b = official.predict(batch, 1.0, torch.Generator().manual_seed(0))
    assert not torch.allclose(a, b, atol=1e-4)  # other simulated verification points

    save_draft(tmp_path, official, runner.fingerprint, {})
    loaded = load_draft(tmp_path, runner)
    assert isinstance(loaded, MoADraft)
    assert (loaded.cfg.period_min, loaded.cfg.period_max, loaded.cfg.depth0) == (2, 3, True)
