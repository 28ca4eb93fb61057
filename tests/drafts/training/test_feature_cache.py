"""The on-disk cache of target activations: round trips, merging, refusals, and training through it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from drafts.errors import CheckpointError
from drafts.neural.factory import KINDS
from drafts.target.activations import ActivationRequest
from drafts.target.runner import TargetRunner
from drafts.training.feature_cache import STORE_DTYPE, FeatureCache, activation_names, activation_request
from drafts.training.trainer import TrainConfig, Trainer
from tests.chat_tokenizer import ChatTokenizer
from tests.drafts.training.conversations import conversations
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())


IDS = torch.tensor([5, 9, 2, 7])


def test_a_stored_activation_comes_back_as_rounded_when_stored(runner: TargetRunner, tmp_path: Path) -> None:
    cache = FeatureCache(tmp_path, runner.fingerprint)
    hidden = torch.randn(4, 8)

    returned = cache.put(IDS, {"hidden.2": hidden})
    again = cache.get(IDS, {"hidden.2"})

    assert again is not None
    assert torch.equal(returned["hidden.2"], hidden.to(STORE_DTYPE).float())
    assert torch.equal(again["hidden.2"], returned["hidden.2"])
    assert (cache.hits, cache.misses) == (1, 0)


def test_a_lookup_needing_a_name_not_cached_is_a_miss_and_later_names_merge(
    runner: TargetRunner, tmp_path: Path
) -> None:
    cache = FeatureCache(tmp_path, runner.fingerprint)
    cache.put(IDS, {"hidden.2": torch.ones(4, 8)})

    assert cache.get(IDS, {"hidden.2", "kv"}) is None
    assert cache.get(torch.tensor([5, 9, 2]), {"hidden.2"}) is None  # another sequence
    cache.put(IDS, {"kv": torch.zeros(4, 2, 6)})
    both = cache.get(IDS, {"hidden.2", "kv"})

    assert both is not None and both["kv"].shape == (4, 2, 6) and both["hidden.2"].sum() == 32


def test_a_cache_of_another_target_is_refused_naming_both(runner: TargetRunner, tmp_path: Path) -> None:
    FeatureCache(tmp_path, runner.fingerprint)
    other = dataclasses.replace(runner.fingerprint, name="other-model", num_layers=99)

    with pytest.raises(CheckpointError, match=r"other-model.*99 layers|another --feature-cache"):
        FeatureCache(tmp_path, other)


def test_a_torn_file_is_recomputed_instead_of_read(runner: TargetRunner, tmp_path: Path) -> None:
    cache = FeatureCache(tmp_path, runner.fingerprint)
    cache.put(IDS, {"hidden.2": torch.ones(4, 8)})
    (path,) = [p for p in tmp_path.rglob("*.safetensors")]
    path.write_bytes(path.read_bytes()[:20])

    assert cache.get(IDS, {"hidden.2"}) is None


def test_a_cache_that_cannot_be_written_warns_once_and_training_goes_on(
    runner: TargetRunner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = FeatureCache(tmp_path, runner.fingerprint)
    for name in {p.name for p in [cache._path(IDS).parent, cache._path(torch.tensor([1, 2])).parent]}:
        (tmp_path / name).write_text("a file where the cache needs a directory")

    first = cache.put(IDS, {"hidden.2": torch.ones(4, 8)})
    cache.put(torch.tensor([1, 2]), {"hidden.2": torch.ones(2, 8)})

    assert first["hidden.2"].shape == (4, 8) and not cache.writable
    assert capsys.readouterr().err.count("training goes on without caching") == 1


@pytest.mark.parametrize("kind", KINDS)
def test_training_from_the_cache_equals_training_that_filled_it(
    runner: TargetRunner, kind: str, tmp_path: Path
) -> None:
    cfg = TrainConfig(tokens=500, accum=2, lr=3e-3, warmup_steps=2, checkpoint_every=100, seed=3)  # two epochs
    models = []
    for run in ("fills", "reads"):
        cache = FeatureCache(tmp_path / "cache", runner.fingerprint)
        model = random_draft(kind, runner, seed=1)
        Trainer(model, runner, conversations(), cfg, tmp_path / run, cache).run({})
        models.append(dict(model.named_parameters()))
        assert cache.hits > 0
    assert cache.misses == 0  # the second run never ran the target
    for name, parameter in models[0].items():
        assert torch.equal(parameter, models[1][name]), name


def test_the_manifest_gathers_the_names_every_run_of_the_directory_wants(runner: TargetRunner, tmp_path: Path) -> None:
    (tmp_path / "cache.json").write_text(json.dumps({"target": runner.fingerprint.to_dict(), "dtype": "torch.float16"}))
    older = FeatureCache(tmp_path, runner.fingerprint)  # a manifest written before names were recorded
    later = FeatureCache(tmp_path, runner.fingerprint)

    assert older.wanted({"hidden.2"}) == {"hidden.2"}
    assert later.wanted({"hidden.2", "kv"}) == {"hidden.2", "kv"}
    assert older.wanted({"hidden.2"}) == {"hidden.2", "kv"}
    assert json.loads((tmp_path / "cache.json").read_text())["names"] == ["hidden.2", "kv"]
    assert activation_request({"hidden.2", "kv"}) == ActivationRequest((2,), True)
    assert activation_names(ActivationRequest((2,), True)) == {"hidden.2", "kv"}


def test_one_directory_serves_two_kinds_with_one_target_pass_per_sequence(runner: TargetRunner, tmp_path: Path) -> None:
    """EAGLE runs first and fills what MoA (registered on the same directory) needs too: the MoA run
    then never runs the target, and trains exactly as it does on a cache of its own."""
    cfg = TrainConfig(tokens=300, accum=2, lr=3e-3, warmup_steps=2, checkpoint_every=100, seed=3)
    shared = FeatureCache(tmp_path / "shared", runner.fingerprint)
    moa = random_draft("moa", runner, seed=1)
    moa_run = Trainer(moa, runner, conversations(), cfg, tmp_path / "moa", shared)
    eagle_cache = FeatureCache(tmp_path / "shared", runner.fingerprint)
    Trainer(random_draft("eagle", runner, seed=1), runner, conversations(), cfg, tmp_path / "eagle", eagle_cache).run(
        {}
    )
    assert eagle_cache.misses > 0

    moa_run.run({})
    alone = random_draft("moa", runner, seed=1)
    Trainer(
        alone, runner, conversations(), cfg, tmp_path / "alone", FeatureCache(tmp_path / "own", runner.fingerprint)
    ).run({})

    assert shared.hits > 0 and shared.misses == 0  # MoA never ran the target
    for name, parameter in alone.named_parameters():
        assert torch.equal(parameter, dict(moa.named_parameters())[name]), name
