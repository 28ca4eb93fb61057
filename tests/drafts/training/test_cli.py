"""``moa-train`` end to end on a tiny model, and its input errors, which must come before any model load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.target.loading import LoadedTarget
from drafts.training import cli
from drafts.training.checkpoint import CONFIG_FILE, load_draft
from drafts.training.trainer import STATE_FILE
from tests.chat_tokenizer import ChatTokenizer
from tests.drafts.training.conversations import CHATS
from tests.tiny_drafts import tiny_llama, tiny_target_runner


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Targets ``main`` asked for; each load gives the tiny random Llama with the chat tokenizer."""
    asked: list[str | None] = []

    def load_target(spec: str | None, device: torch.device, dtype: torch.dtype) -> LoadedTarget:
        asked.append(spec)
        runner = tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())
        return LoadedTarget(runner.model, runner.tokenizer, runner.fingerprint)

    monkeypatch.setattr(cli, "load_target", load_target)
    return asked


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "chats.jsonl"
    rows = [
        {"id": str(i), "conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a}]}
        for i, (q, a) in enumerate(CHATS)
    ]
    rows.append({"id": "unanswered", "conversations": [{"from": "human", "value": "anyone?"}]})  # skipped
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def train(data: Path, out: Path, *options: str) -> int:
    return cli.main(["--data", str(data), "--out", str(out), "--device", "cpu", "--accum", "1", *options])


def test_a_run_writes_a_checkpoint_that_loads_and_a_resumed_run_continues_it(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"

    assert train(data, out, "--draft", "eagle", "--tokens", "120", "--draft-vocab", "32") == 0

    first = json.loads((out / CONFIG_FILE).read_text())
    assert first["kind"] == "eagle" and first["draft_vocab"] == 32
    assert 0 < first["training"]["draft_vocab_coverage"] <= 1
    runner = tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())
    assert load_draft(out, runner).parts.draft_vocab == 32

    assert train(data, out, "--draft", "eagle", "--tokens", "240", "--resume") == 0

    resumed = json.loads((out / CONFIG_FILE).read_text())["training"]["state"]
    assert resumed["tokens_seen"] >= 240 and resumed["step"] > first["training"]["state"]["step"]
    assert loads == [None, None]


def test_an_out_directory_holding_a_run_is_refused_without_resume(
    loads: list[str | None], data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"")

    assert train(data, tmp_path, "--tokens", "100") == 2

    assert "already holds a training run; pass --resume" in capsys.readouterr().err
    assert loads == []


def test_resuming_an_empty_directory_is_refused(
    loads: list[str | None], data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(data, tmp_path / "empty", "--tokens", "100", "--resume") == 2

    assert "start without --resume" in capsys.readouterr().err
    assert loads == []


def test_resuming_a_run_of_another_draft_kind_is_refused(
    loads: list[str | None], data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(data, tmp_path, "--draft", "independent", "--tokens", "60", "--draft-vocab", "0") == 0
    capsys.readouterr()

    assert train(data, tmp_path, "--draft", "moa", "--tokens", "120", "--resume") == 2

    assert "holds a independent draft, not moa; pass --draft independent" in capsys.readouterr().err
    assert loads == [None]


def test_a_missing_data_file_is_refused(
    loads: list[str | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(tmp_path / "missing.jsonl", tmp_path / "run", "--tokens", "100") == 2

    assert "does not exist; use --data sharegpt" in capsys.readouterr().err
    assert loads == []


def test_init_starts_a_new_run_from_a_checkpoints_weights(loads: list[str | None], data: Path, tmp_path: Path) -> None:
    assert train(data, tmp_path / "base", "--draft", "eagle", "--tokens", "40") == 0
    assert train(data, tmp_path / "tuned", "--draft", "eagle", "--tokens", "1", "--init", str(tmp_path / "base")) == 0
    runner = tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())
    base, tuned = load_draft(tmp_path / "base", runner), load_draft(tmp_path / "tuned", runner)

    assert torch.equal(base.parts.d2t, tuned.parts.d2t)  # the same draft vocabulary
    moved = [
        n
        for (n, a), (_, b) in zip(base.state_dict().items(), tuned.state_dict().items(), strict=True)
        if not torch.equal(a, b)
    ]
    assert moved  # trained on ...
    drift = max(
        (a - b).abs().max().item() for a, b in zip(base.state_dict().values(), tuned.state_dict().values(), strict=True)
    )
    assert drift < 0.01  # ... one optimizer step away from the base's weights, not a fresh initialisation
    config = json.loads((tmp_path / "tuned" / CONFIG_FILE).read_text())
    assert config["training"]["init"] == str(tmp_path / "base")
    base_training = json.loads((tmp_path / "base" / CONFIG_FILE).read_text())["training"]
    assert config["training"]["init_training"] == base_training


def test_a_resumed_run_keeps_the_history_of_the_run_it_continues(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "base", "--draft", "eagle", "--tokens", "40") == 0
    assert train(data, tmp_path / "tuned", "--draft", "eagle", "--tokens", "40", "--init", str(tmp_path / "base")) == 0
    begun = json.loads((tmp_path / "tuned" / CONFIG_FILE).read_text())["training"]

    assert train(data, tmp_path / "tuned", "--draft", "eagle", "--tokens", "80", "--resume") == 0
    assert train(data, tmp_path / "tuned", "--draft", "eagle", "--tokens", "120", "--resume") == 0

    resumed = json.loads((tmp_path / "tuned" / CONFIG_FILE).read_text())["training"]
    assert resumed["init"] == begun["init"] and resumed["init_training"] == begun["init_training"]
    assert resumed["first_command"] == begun["command"] and "--init" in resumed["first_command"]
    assert "--resume" in resumed["command"]


def test_init_with_another_draft_kind_is_refused(loads: list[str | None], data: Path, tmp_path: Path) -> None:
    assert train(data, tmp_path / "base", "--draft", "eagle", "--tokens", "10") == 0

    assert train(data, tmp_path / "tuned", "--draft", "moa", "--tokens", "10", "--init", str(tmp_path / "base")) == 2


def test_no_staircase_continues_a_moa_draft_without_the_curriculum_and_records_it(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "base", "--draft", "moa", "--tokens", "10") == 0
    base_config = json.loads((tmp_path / "base" / CONFIG_FILE).read_text())["config"]

    code = train(
        data, tmp_path / "tuned", "--draft", "moa", "--tokens", "10", "--init", str(tmp_path / "base"), "--no-staircase"
    )

    assert code == 0
    assert base_config["staircase"] is True
    assert json.loads((tmp_path / "tuned" / CONFIG_FILE).read_text())["config"]["staircase"] is False


@pytest.mark.parametrize("options", [["--draft", "eagle"], ["--draft", "moa", "--resume"]])
def test_no_staircase_outside_a_new_moa_run_is_refused(
    loads: list[str | None], data: Path, tmp_path: Path, options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(data, tmp_path / "run", "--tokens", "10", "--no-staircase", *options) == 2
    assert "--no-staircase applies to a new or --init MoA run" in capsys.readouterr().err
    assert loads == []  # refused before the target was loaded


def test_init_extends_a_moa_draft_with_the_ablation_options_and_records_them(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "base", "--draft", "moa", "--tokens", "10") == 0
    options = ["--lsa-layers", "2", "--final-hidden", "--tli", "1", "--tail-loss", "normalised", "--no-staircase"]

    code = train(data, tmp_path / "ext", "--draft", "moa", "--tokens", "10", "--init", str(tmp_path / "base"), *options)

    assert code == 0
    meta = json.loads((tmp_path / "ext" / CONFIG_FILE).read_text())
    assert (meta["config"]["lsa_layers"], meta["config"]["final_hidden"], meta["config"]["tli_layers"]) == (2, True, 1)
    assert meta["training"]["config"]["weights"]["tail_norm"] is True
    runner = tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())
    base, extended = load_draft(tmp_path / "base", runner), load_draft(tmp_path / "ext", runner)
    shared = base.state_dict().keys()
    assert shared < extended.state_dict().keys()  # the new projection, and every weight of the base
    drift = max((base.state_dict()[n] - extended.state_dict()[n]).abs().max().item() for n in shared)
    assert drift < 0.01  # one optimizer step from the base's weights


def test_the_verification_simulation_options_are_recorded_on_a_new_run_and_on_an_init_run(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "new", "--draft", "moa", "--tokens", "10", "--verify-period", "2-5") == 0
    new = json.loads((tmp_path / "new" / CONFIG_FILE).read_text())["config"]
    init = ["--init", str(tmp_path / "new"), "--depth0", "--verify-period", "3"]

    assert train(data, tmp_path / "ext", "--draft", "moa", "--tokens", "10", *init) == 0

    ext = json.loads((tmp_path / "ext" / CONFIG_FILE).read_text())["config"]
    assert (new["period_min"], new["period_max"], new["depth0"]) == (2, 5, False)
    assert (ext["period_min"], ext["period_max"], ext["depth0"]) == (3, 3, True)


def test_the_official_norm_init_draws_a_new_drafts_rmsnorm_weights_near_zero_and_is_recorded(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "run", "--draft", "moa", "--tokens", "10", "--norm-init", "official") == 0

    meta = json.loads((tmp_path / "run" / CONFIG_FILE).read_text())
    model = load_draft(tmp_path / "run", tiny_target_runner(tiny_llama(seed=0), ChatTokenizer()))
    norms = [w for name, w in model.state_dict().items() if name.endswith("layernorm.weight")]
    assert meta["training"]["norm_init"] == "official"
    assert norms and all(w.abs().mean() < 0.1 for w in norms)  # ~N(0, 0.02), one small step later


def test_the_norm_init_of_a_continued_draft_is_refused(
    loads: list[str | None], data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--draft", "moa", "--tokens", "10", "--init", str(tmp_path), "--norm-init", "official"]

    assert train(data, tmp_path / "run", *options) == 2
    assert "--norm-init sets a new draft's initial weights" in capsys.readouterr().err
    assert loads == []


def test_eagle_trains_with_context_alignment_and_records_it(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "run", "--draft", "eagle", "--tokens", "10", "--align-steps", "3") == 0

    assert json.loads((tmp_path / "run" / CONFIG_FILE).read_text())["training"]["config"]["align_steps"] == 3


def test_a_batched_run_trains_several_conversations_per_forward_and_records_it(
    loads: list[str | None], data: Path, tmp_path: Path
) -> None:
    assert train(data, tmp_path / "run", "--draft", "moa", "--tokens", "60", "--batch", "3") == 0

    training = json.loads((tmp_path / "run" / CONFIG_FILE).read_text())["training"]
    assert training["config"]["batch"] == 3
    assert training["state"]["step"] == 1 and training["state"]["tokens_seen"] >= 60  # three conversations, one step


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--draft", "moa", "--align-steps", "2"], "no context to align"),
        (["--draft", "moa", "--tail-loss", "normalised"], "add --tli N"),
    ],
)
def test_training_options_the_draft_cannot_use_are_refused(
    loads: list[str | None],
    data: Path,
    tmp_path: Path,
    options: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert train(data, tmp_path / "run", "--tokens", "10", *options) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--draft", "eagle", "--final-hidden"], "--final-hidden apply to MoA drafts only"),
        (["--draft", "eagle", "--lsa-layers", "2"], "--lsa-layers apply to MoA drafts only"),
        (["--draft", "eagle", "--verify-period", "2-5", "--depth0"], "--verify-period, --depth0 apply to MoA"),
        (["--draft", "moa", "--verify-period", "5-2"], "--verify-period 5-2: give LO-HI"),
        (["--draft", "moa", "--resume", "--lsa-layers", "2"], "keeps the architecture it recorded"),
    ],
)
def test_architecture_options_that_cannot_apply_are_refused_before_loading(
    loads: list[str | None],
    data: Path,
    tmp_path: Path,
    options: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert train(data, tmp_path / "run", "--tokens", "10", *options) == 2
    assert message in capsys.readouterr().err
    assert loads == []
