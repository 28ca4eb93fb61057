"""moa-chat's command line: flags over the config file, one-line errors, and headless answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import build_parser, main, settings_from
from app.demo.link_control import LinkAfter
from drafts.errors import ConfigError
from drafts.locations import REPO_ROOT


@pytest.fixture(autouse=True)
def own_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the real config file or conversations."""
    monkeypatch.setenv("MOA_CHAT_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("MOA_CHAT_DATA", str(tmp_path / "data"))
    return tmp_path


def parse(*argv: str):
    return settings_from(build_parser().parse_args(list(argv)))


def test_version_prints_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("moa-chat ")


def test_flags_override_the_file_and_file_problems_are_reported(own_homes: Path) -> None:
    (own_homes / "config.toml").write_text('temperature = 9\nmax_tokens = 99\ntheme = "nord"\n')
    settings, problems, path = parse("--max-tokens", "12", "--link", "3g")
    assert (settings.max_tokens, settings.link, settings.theme, settings.temperature) == (12, "3g", "nord", 0.0)
    assert path == own_homes / "config.toml"
    assert len(problems) == 1 and "temperature = 9" in problems[0]


def test_every_key_of_the_file_is_a_flag() -> None:
    from app.settings import OPTIONS

    flags = {action.dest for action in build_parser()._actions}
    assert {option.name for option in OPTIONS} <= flags


@pytest.mark.parametrize(
    ("argv", "mode"),
    [
        ([], "demo"),
        (["--demo"], "demo"),
        (["--local"], "local"),
        (["--api"], "api"),
        (["--server", "ws://h:1"], "remote"),
        (["--api", "--server", "ws://h:1"], "api"),
        (["--mode", "local"], "local"),
    ],
)
def test_the_mode_flags(argv: list[str], mode: str) -> None:
    assert parse(*argv)[0].mode == mode


def test_stream_is_a_switch_over_the_file(own_homes: Path) -> None:
    assert parse()[0].stream is False
    assert parse("--stream")[0].stream is True
    assert parse("--server", "ws://h:1", "--stream")[0].stream is True
    (own_homes / "config.toml").write_text("stream = true\n")
    assert parse()[0].stream is True
    assert parse("--no-stream")[0].stream is False
    assert parse("--local")[0].stream is True  # the file's preference: local mode ignores it, no error


@pytest.mark.parametrize(
    ("argv", "why"),
    [(["--local"], "local mode has none"), (["--api"], "api mode has no draft"), (["--draft", "none"], "--draft none")],
)
def test_stream_given_where_it_means_nothing_says_why(argv: list[str], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parse("--stream", *argv)
    assert parse("--no-stream", *argv)[0].stream is False


def test_two_modes_are_refused() -> None:
    with pytest.raises(ConfigError, match="choose one mode: --demo and --local"):
        parse("--demo", "--local")


def test_a_config_file_given_by_flag_must_exist(own_homes: Path) -> None:
    with pytest.raises(ConfigError, match="--config .* does not exist"):
        parse("--config", str(own_homes / "missing.toml"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--temperature", "7", "--headless", "--prompt", "x"], "temperature = 7.0 is not allowed"),
        (["--demo", "--local"], "choose one mode"),
        (["--prompt", "hi"], "--prompt and --json go with --headless"),
        (["--headless"], "--headless needs --prompt"),
        (["--headless", "--prompt", "x", "--local", "--link-after", "5:lan"], "--link-after switches the demo's link"),
        (["--headless", "--prompt", "x", "--link-after", "soon"], "--link-after takes N:PRESET"),
        (["--headless", "--prompt", "x", "--draft", "/no/such/checkpoint"], "no draft checkpoint at"),
        (["--headless", "--prompt", "x", "--local", "--target", "/x/other.gguf"], "no moa draft is shipped"),
        (["--headless", "--prompt", "x", "--server", "http://h"], "server = 'http://h' is not allowed"),
        (["--headless", "--prompt", "x", "--local", "--stream"], "--stream streams the draft's proposals"),
    ],
)
def test_errors_are_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("moa-chat: error: ") and message in err
    assert "\n" not in err and "Traceback" not in err


def test_an_unexpected_failure_is_one_line_with_the_details_in_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MOA_CHAT_CACHE", str(tmp_path / "cache"))

    def broken(settings, on_progress=None):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr("app.cli.launch", broken)
    assert main(["--headless", "--prompt", "x", "--local"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("moa-chat: internal error: RuntimeError: something inside broke") and "\n" not in err
    assert "Traceback" in (tmp_path / "cache" / "crash.log").read_text()


def test_a_bad_flag_type_is_argparse_usage_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--max-tokens", "many"]) == 2
    assert "invalid int value: 'many'" in capsys.readouterr().err


def test_a_draft_trained_for_another_target_is_refused_before_loading(
    own_homes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = own_homes / "draft"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"format": 1, "kind": "moa", "target": {"name": "Other-1B"}}))
    assert main(["--headless", "--prompt", "x", "--local", "--draft", str(checkpoint)]) == 2
    assert "trained for Other-1B, but the target is SmolLM2-135M-Instruct" in capsys.readouterr().err


def test_link_after_parses_count_and_preset() -> None:
    assert LinkAfter.parse("20:LAN") == LinkAfter(20, "lan")
    with pytest.raises(ConfigError, match="unknown link profile"):
        LinkAfter.parse("20:56k")


def test_headless_never_imports_textual() -> None:
    code = "import sys, app.cli, app.headless, app.launch; sys.exit('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT).returncode == 0


def test_the_cli_reads_settings_and_can_spawn_the_demo_before_importing_torch() -> None:
    code = (
        "import sys, app.cli, app.launch, app.demo, app.settings.draft; from app.settings import load_settings;"
        "load_settings(); sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT).returncode == 0


# -- end to end, with the real SmolLM2 ---------------------------------------------------------------------
def headless(*argv: str, timeout: float = 600) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "app", "--headless", "--json", "--device", "cpu", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def check_answer(result: dict, labels: set[str]) -> None:
    assert result["text"].strip()
    assert result["tokens"] == len(result["provenance"]) == len(result["token_ids"]) > 0
    assert set(result["provenance"]) <= labels
    stats = result["stats"]
    expected = {"tau", "round_trips_per_100", "tokens_per_s", "ttft_s", "offline_tokens", "kept_after_repair",
                "kept_after_resync", "shape"}
    assert set(stats) == expected
    assert stats["tokens_per_s"] > 0 and stats["ttft_s"] > 0


@pytest.mark.integration
def test_headless_demo_answers_with_provenance_per_token() -> None:
    result = headless("--demo", "--prompt", "Name three primary colours.", "--max-tokens", "32")
    check_answer(result, {"accepted", "target"})
    assert result["engine"]["mode"] == "demo" and result["engine"]["draft"] == "moa"
    assert "accepted" in result["provenance"]  # the MoA draft gets tokens through
    assert result["stats"]["tau"] > 1.0 and result["stats"]["offline_tokens"] == 0
    assert result["stats"]["shape"] == "tree 4,4,16"  # the default for a verifier on a CPU


@pytest.mark.integration
def test_headless_demo_writes_offline_then_repairs_when_the_link_returns() -> None:
    result = headless(
        "--demo",
        "--link",
        "offline",
        "--link-after",
        "6:lan",
        "--prompt",
        "Count from one to ten.",
        "--max-tokens",
        "24",
    )
    check_answer(result, {"accepted", "target", "offline", "repaired"})
    assert result["stats"]["offline_tokens"] >= 6
    assert "repaired" in result["provenance"] and "offline" not in result["provenance"]


@pytest.mark.integration
def test_headless_local_answers_without_a_network() -> None:
    result = headless("--local", "--prompt", "Say hello.", "--max-tokens", "16")
    check_answer(result, {"accepted", "target"})
    assert result["engine"]["mode"] == "local"


@pytest.mark.integration
def test_headless_api_streams_the_verifiers_own_tokens() -> None:
    result = headless("--api", "--prompt", "Say hello.", "--max-tokens", "16")
    check_answer(result, {"target"})
    assert result["engine"]["mode"] == "api" and result["engine"]["draft"] == "none"


@pytest.mark.integration
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_mid_answer_stops_the_demo_verifier(sig: signal.Signals) -> None:
    app = subprocess.Popen(
        [sys.executable, "-m", "app", "--headless", "--demo", "--device", "cpu", "--link", "3g"]
        + ["--prompt", "Write a long story about a lighthouse.", "--max-tokens", "400"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        preexec_fn=default_sigint,  # a suite started in the background (`pytest &`) passes SIGINT on ignored
    )
    assert app.stderr is not None
    for line in app.stderr:  # until the verifier listens
        if "verifier ready" in line:
            break
    verifiers = verifier_pids(parent=app.pid)
    assert verifiers, "the demo's verifier is not running"
    time.sleep(3.0)  # into the answer
    app.send_signal(sig)
    code = app.wait(60)
    stderr = app.stderr.read()
    assert code == 130, f"exit code {code}; stderr ends: {stderr[-2000:]}"
    assert "Traceback" not in stderr
    assert not set(verifiers) & set(verifiers_after(verifiers)), "the demo's verifier outlived the app"


def default_sigint() -> None:
    """In the child before exec: Ctrl+C's default, so that Python installs its KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def verifiers_after(verifiers: list[int], deadline_s: float = 10.0) -> list[int]:
    """Which of ``verifiers`` still run, given up to ``deadline_s`` to finish dying: a verifier killed
    with its parent (PDEATHSIG) is gone a moment after the app, later on a loaded machine."""
    end = time.monotonic() + deadline_s
    while (alive := [pid for pid in verifier_pids() if pid in verifiers]) and time.monotonic() < end:
        time.sleep(0.1)
    return alive


def verifier_pids(parent: int | None = None) -> list[int]:
    """Running ``python -m server_stub`` processes (of ``parent``, if given; zombies excluded)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        state, ppid = text.rsplit(")", 1)[1].split()[:2]
        if b"server_stub" in cmdline and state != "Z" and parent in (None, int(ppid)):
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.integration
def test_headless_remote_with_a_token_and_a_wrong_token(tmp_path: Path) -> None:
    from app.demo.demo import DemoOptions, free_port, verifier_command
    from app.demo.verifier import VerifierProcess, child_env

    token, wrong = tmp_path / "token", tmp_path / "wrong"
    token.write_text("a-long-random-secret\n")
    wrong.write_text("not-the-secret\n")
    port = free_port()
    command = [*verifier_command(DemoOptions(device="cpu"), port), "--token-file", str(token)]
    server = VerifierProcess(command, port, env=child_env(str(REPO_ROOT)))
    server.start()
    try:
        server.wait_ready()
        url = f"ws://127.0.0.1:{port}"
        result = headless("--server", url, "--token-file", str(token), "--draft", "eagle", "--prompt", "Hi!")
        check_answer(result, {"accepted", "target"})
        assert result["engine"]["mode"] == "remote" and result["engine"]["verifier"] == url

        refused = subprocess.run(
            [sys.executable, "-m", "app", "--headless", "--server", url, "--token-file", str(wrong)]
            + ["--draft", "eagle", "--device", "cpu", "--offline-model", "none", "--prompt", "Hi!"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert refused.returncode == 2, refused.stderr[-2000:]
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith("moa-chat: error:") and "UNAUTHORIZED" in last and "Traceback" not in refused.stderr
    finally:
        server.close()


@pytest.mark.integration
def test_headless_stream_against_a_real_verifier_answers_as_rounds_do_at_t0() -> None:
    from app.demo.demo import DemoOptions, free_port, verifier_command
    from app.demo.verifier import VerifierProcess, child_env
    from app.settings.draft import resolve_draft

    port = free_port()
    moa = resolve_draft("moa", "smollm2").server_half  # the verifier computes MoA's memory vectors
    command = verifier_command(DemoOptions(device="cpu", draft_checkpoint=moa), port)
    server = VerifierProcess(command, port, env=child_env(str(REPO_ROOT)))
    server.start()
    try:
        server.wait_ready()
        ask = ("--server", f"ws://127.0.0.1:{port}", "--offline-model", "none", "--max-tokens", "40")
        ask += ("--prompt", "Name the planets of the solar system in order.")
        streamed, rounds = headless(*ask, "--stream"), headless(*ask, "--no-stream")
    finally:
        server.close()
    check_answer(streamed, {"accepted", "target"})
    assert streamed["engine"]["stream"] is True and rounds["engine"]["stream"] is False
    assert streamed["stats"]["shape"].startswith("stream ") and not rounds["stats"]["shape"].startswith("stream")
    assert "accepted" in streamed["provenance"]  # the draft's proposals got through the stream
    assert (streamed["token_ids"], streamed["text"]) == (rounds["token_ids"], rounds["text"])  # exact at T=0
