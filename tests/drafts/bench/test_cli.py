"""``moa-bench`` end to end on a tiny model, and its input errors, which must come before any model load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.bench import cli
from drafts.drafters import registry
from drafts.target.default_shape import local_shape
from drafts.target.loading import LoadedTarget
from drafts.target.packed_linear import pack_linear_layers, resolve_linear
from drafts.training.checkpoint import save_draft
from tests.tiny_drafts import random_draft
from tests.tiny_targets import FakeTokenizer, tiny_model, tiny_runner

JSON_KEYS = {
    "tau",
    "accept_rate",
    "tokens_per_s",
    "speedup",
    "target_forwards",
    "new_tokens",
    "per_position_acceptance",
    "draft_ms_per_round",
    "verify_ms_per_round",
    "identical_to_ar",
}


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Targets ``main`` asked for; each load gives a tiny random Llama, its layers as ``linear`` asks."""
    asked: list[str | None] = []

    def load_target(spec: str | None, device: torch.device, dtype: torch.dtype, linear: str = "dense") -> LoadedTarget:
        asked.append(spec)
        runner = tiny_runner(tiny_model("llama", seed=5), eos_token_id=63)
        mode = resolve_linear(linear, device, dtype)
        if mode == "packed":
            pack_linear_layers(runner.model)
        return LoadedTarget(runner.model, FakeTokenizer(eos_token_id=63), runner.fingerprint, mode)

    monkeypatch.setattr(cli, "load_target", load_target)
    return asked


@pytest.fixture
def prompts_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": "count to ten"}\n{"turns": ["name three fruits"]}\n', encoding="utf-8")
    return path


def test_a_run_prints_the_table_and_writes_every_statistic_as_json(
    loads: list[str | None], prompts_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results" / "bench.json"

    options = ["--method", "lookup,oracle", "--max-new-tokens", "8", "--device", "cpu"]
    code = cli.main([*options, "--dataset", str(prompts_file), "--json", str(out)])

    assert code == 0 and loads == [None]
    written = json.loads(out.read_text())
    assert set(written["methods"]) == {"ar", "lookup", "oracle"}  # ar is always measured
    for name, stats in written["methods"].items():
        assert set(stats) >= JSON_KEYS, name
    assert written["methods"]["oracle"]["identical_to_ar"] is True
    assert written["config"]["prompts"] == 2 and written["config"]["draft_shape"] == expected_shape()
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:2] == ["method", "tau"]
    assert "oracle: ideal speedup" in table


def test_a_tree_shape_reaches_the_benchmark(loads: list[str | None], prompts_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"

    options = ["--method", "ar,lookup", "--limit", "1", "--tree", "2,2,4", "--max-new-tokens", "4"]
    code = cli.main([*options, "--dataset", str(prompts_file), "--json", str(out)])

    assert code == 0
    assert json.loads(out.read_text())["config"]["draft_shape"] == "tree 2,2,4"


def test_dtype_bfloat16_runs_the_target_and_the_drafters_in_bfloat16(
    monkeypatch: pytest.MonkeyPatch, prompts_file: Path, tmp_path: Path
) -> None:
    def load_target(spec: str | None, device: torch.device, dtype: torch.dtype, linear: str = "dense") -> LoadedTarget:
        runner = tiny_runner(tiny_model("llama", seed=5), eos_token_id=63)
        return LoadedTarget(runner.model.to(dtype), FakeTokenizer(eos_token_id=63), runner.fingerprint)

    monkeypatch.setattr(cli, "load_target", load_target)
    out = tmp_path / "bench.json"

    options = ["--method", "lookup", "--limit", "1", "--max-new-tokens", "6", "--dtype", "bfloat16"]
    code = cli.main([*options, "--dataset", str(prompts_file), "--json", str(out)])

    assert code == 0
    written = json.loads(out.read_text())
    assert written["config"]["dtype"] == "bfloat16"
    assert written["methods"]["lookup"]["new_tokens"] == written["methods"]["ar"]["new_tokens"] > 0


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")
@pytest.mark.parametrize(
    ("flags", "linear", "shape"),
    [
        ([], "packed", "tree 3,4,8"),
        (["--dense-linear"], "dense", "chain 4"),
        (["--packed-linear"], "packed", "tree 3,4,8"),
        (["--dense-linear", "--chain", "3"], "dense", "chain 3"),
    ],
)
def test_the_target_runs_packed_on_a_cpu_with_its_best_shape_unless_told_otherwise_and_the_json_says_so(
    loads: list[str | None], prompts_file: Path, tmp_path: Path, flags: list[str], linear: str, shape: str
) -> None:
    out = tmp_path / "bench.json"

    options = ["--method", "lookup", "--limit", "1", "--max-new-tokens", "6", "--device", "cpu", *flags]
    code = cli.main([*options, "--dataset", str(prompts_file), "--json", str(out)])

    assert code == 0
    written = json.loads(out.read_text())
    assert written["config"]["linear"] == linear and written["config"]["draft_shape"] == shape
    assert written["methods"]["lookup"]["identical_to_ar"] is True


def test_dense_and_packed_linear_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--dense-linear", "--packed-linear"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_prompts_longer_than_the_context_are_skipped_named_and_replaced_by_later_ones(
    loads: list[str | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "prompts.jsonl"
    rows = [{"id": "short1", "prompt": "count"}, {"id": "huge", "prompt": "x" * 5000}, {"id": "short2", "prompt": "go"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "bench.json"

    code = cli.main(
        ["--method", "lookup", "--limit", "2", "--max-new-tokens", "4", "--dataset", str(path), "--json", str(out)]
    )

    assert code == 0
    config = json.loads(out.read_text())["config"]
    assert config["prompts"] == 2 and config["skipped_prompts"] == ["huge"]
    assert "skipped 1 prompt(s) longer than the context" in capsys.readouterr().err


def expected_shape() -> str:
    """moa-bench's default shape here: for a CPU float32 target (drafts.target.default_shape)."""
    return local_shape(torch.device("cpu"), torch.float32).describe()


def run_failing(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``main``; it must return 2; the stderr message."""
    assert cli.main(argv) == 2
    return capsys.readouterr().err


def test_confidence_without_a_chain_names_the_default_tree(
    prompts_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not local_shape(torch.device("cpu"), torch.float32).is_tree:
        pytest.skip("the default shape here is a chain")

    err = run_failing(["--method", "lookup", "--confidence", "0.2", "--dataset", str(prompts_file)], capsys)

    assert "--confidence shapes a chain" in err and "--chain G" in err


def test_an_unknown_method_is_an_error_that_lists_the_choices(
    loads: list[str | None], prompts_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_failing(["--method", "ar,nope", "--dataset", str(prompts_file)], capsys)

    assert "moa-bench: error: unknown method 'nope'; choose from ar, generate, " in err
    assert "lookup" in err and "oracle" in err
    assert loads == []


@pytest.mark.parametrize("tree", ["4,4", "a,b,c", "4,0,16"])
def test_a_malformed_tree_is_an_error_with_an_example(
    loads: list[str | None], prompts_file: Path, capsys: pytest.CaptureFixture[str], tree: str
) -> None:
    err = run_failing(["--tree", tree, "--dataset", str(prompts_file)], capsys)

    assert "moa-bench: error: --tree takes DEPTH,TOPK,TOTAL" in err and "4,4,16" in err
    assert loads == []


def test_a_missing_dataset_file_is_an_error(
    loads: list[str | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.jsonl"

    err = run_failing(["--dataset", str(missing)], capsys)

    assert f"prompt file {missing} does not exist" in err
    assert loads == []


def test_an_empty_jsonl_file_is_an_error(
    loads: list[str | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")

    err = run_failing(["--dataset", str(empty)], capsys)

    assert f"{empty} has no prompts" in err
    assert loads == []


def test_malformed_jsonl_is_an_error_that_names_the_line(
    loads: list[str | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "fine"}\n{"prompt": "no closing brace"\n', encoding="utf-8")

    err = run_failing(["--dataset", str(broken)], capsys)

    assert f"{broken} line 2: not valid JSON" in err
    assert loads == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
        (["--temperature", "-1"], "temperature must be 0 (greedy) or in [0.001, 1000]"),
        (["--limit", "0"], "--limit must be >= 1"),
        (["--chain", "-2"], "--chain must be >= 0"),
        (["--checkpoint", "moa"], "--checkpoint takes NAME=DIR"),
        (["--checkpoint", "ar=runs/x"], "plain decoding, not a draft"),
        (["--checkpoint", "lookup=runs/x"], "built-in method without a checkpoint"),
        (["--checkpoint", "a,b=runs/x"], "letters, digits"),
    ],
)
def test_invalid_options_are_errors_before_any_model_load(
    loads: list[str | None],
    prompts_file: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    err = run_failing([*argv, "--dataset", str(prompts_file)], capsys)

    assert message in err
    assert loads == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_missing_cuda_device_is_an_error_before_any_model_load(
    loads: list[str | None], prompts_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_failing(["--device", "cuda", "--dataset", str(prompts_file)], capsys)

    assert "--device cuda, but torch sees no CUDA GPU here" in err
    assert loads == []


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoints, methods and tree scorings a test registers vanish with it."""
    for name in ("_REGISTRY", "_CHECKPOINTS", "_LOADED", "_TREE_SCORING"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))


def test_skip_leaves_out_the_first_prompts_and_the_json_says_so(
    loads: list[str | None], prompts_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"

    options = ["--method", "lookup", "--skip", "1", "--max-new-tokens", "4", "--json", str(out)]
    code = cli.main([*options, "--dataset", str(prompts_file)])

    assert code == 0
    config = json.loads(out.read_text())["config"]
    assert config["skip"] == 1 and config["prompts"] == 1


def test_skipping_every_prompt_is_an_error(
    loads: list[str | None], prompts_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_failing(["--method", "lookup", "--skip", "2", "--dataset", str(prompts_file)], capsys)

    assert "--skip 2 leaves no prompt" in err


def test_a_tree_scoring_applies_to_the_named_draft_only_and_stays_identical_to_ar(
    fresh_registry: None, loads: list[str | None], prompts_file: Path, tmp_path: Path
) -> None:
    runner = tiny_runner(tiny_model("llama", seed=5), eos_token_id=63)
    save_draft(tmp_path / "moa", random_draft("moa", runner, seed=1), runner.fingerprint, {})
    out = tmp_path / "bench.json"
    drafts = ["--checkpoint", f"moa={tmp_path / 'moa'}", "--checkpoint", f"moa-cal={tmp_path / 'moa'}"]
    scoring = ["--tree-scoring", "moa-cal=slope=1.5/2,bias=-0.5", "--tree", "3,3,6", "--max-new-tokens", "6"]

    code = cli.main([*drafts, *scoring, "--method", "moa,moa-cal", "--dataset", str(prompts_file), "--json", str(out)])

    assert code == 0
    written = json.loads(out.read_text())
    assert written["config"]["tree_scoring"] == {"moa-cal": "slope=1.5/2,bias=-0.5"}
    assert written["methods"]["moa"]["identical_to_ar"] is True
    assert written["methods"]["moa-cal"]["identical_to_ar"] is True


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("lookup=slope=1.2", "--tree-scoring names a trained draft"),
        ("moa", "--tree-scoring takes NAME=SPEC"),
        ("moa=slope=0", "slopes must be > 0"),
        ("moa=gain=2", "slope=A[/A2...],bias=B[/B2...]"),
    ],
)
def test_a_bad_tree_scoring_is_an_error_before_any_model_load(
    fresh_registry: None,
    loads: list[str | None],
    prompts_file: Path,
    capsys: pytest.CaptureFixture[str],
    item: str,
    message: str,
) -> None:
    err = run_failing(["--method", "moa", "--tree-scoring", item, "--dataset", str(prompts_file)], capsys)

    assert message in err
    assert loads == []
