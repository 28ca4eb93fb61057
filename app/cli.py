"""``moa-chat``: the chat app, or one answer with ``--headless``.

    moa-chat --demo                        everything here: verifier process, link shaper, draft
    moa-chat --server ws://HOST:PORT [--token-file F]
    moa-chat --demo --stream               speculative streaming: the verifier decodes, the draft's proposals ride along
    moa-chat --local                       no network: draft and target on this device
    moa-chat --api [--server URL]          no draft: the verifier decodes and streams
    moa-chat --headless --prompt "..." [--json] [--link offline --link-after 20:lan]

Settings come from the TOML file (``--config F``, ``MOA_CHAT_CONFIG``, or the platformdirs config
dir), then the flags: every key of the file is also a flag (``max_tokens`` is ``--max-tokens``).
A bad value in the file is reported and replaced by its default; a bad flag stops with one line.
Errors are one line and exit code 2, never a traceback. Nothing here imports torch before the
demo's verifier is spawned (:mod:`app.launch`): its load overlaps this process's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import importlib.util
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from app.demo.link_control import LinkAfter
from app.launch import launch, needs_demo
from app.settings import OPTIONS, Settings, load_settings
from drafts.errors import ConfigError, MoaError
from drafts.locations import cache_dir, config_file
from drafts.program_exit import leave

PROG = "moa-chat"
MODE_FLAGS = ("demo", "local", "api")
# Progress bars and warnings on stderr would draw over the app; the demo's verifier inherits these too.
QUIET_LIBRARIES = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    modes = p.add_argument_group("modes (default: the config file's mode, else --demo)")
    modes.add_argument("--demo", action="store_true", help="verifier process + link shaper on this machine")
    modes.add_argument("--local", action="store_true", help="draft and target on this device, no network")
    modes.add_argument("--api", action="store_true", help="no draft: the verifier decodes (--server's, or the demo's)")
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="F",
        help="settings file (default: MOA_CHAT_CONFIG or the config dir)",
    )
    p.add_argument("--headless", action="store_true", help="no UI: answer --prompt, print it and its statistics")
    p.add_argument("--prompt", default=None, help="the question, with --headless")
    p.add_argument("--json", action="store_true", help="with --headless: one JSON object on stdout")
    p.add_argument("--link-after", default=None, metavar="N:PRESET", help="demo: switch the link after N tokens")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    settings = p.add_argument_group("settings (each also a key of the config file)")
    for option in OPTIONS:
        if option.name == "server":
            settings.add_argument("--server", default=None, metavar="URL", help="remote mode: " + option.help)
            continue
        if option.kind is bool:  # a switch: --stream / --no-stream
            help_line = f"{option.help} (default: {'on' if option.default else 'off'})"
            settings.add_argument(option.flag, action=argparse.BooleanOptionalAction, default=None, help=help_line)
            continue
        settings.add_argument(option.flag, type=option.kind, default=None, help=f"{option.help} ({option.default!r})")
    return p


def settings_from(args: argparse.Namespace) -> tuple[Settings, list[str], Path]:
    """The file's settings (and its problems), with the flags applied on top; strict for the flags."""
    path = args.config if args.config is not None else config_file()
    if args.config is not None and not args.config.is_file():
        raise ConfigError(f"--config {args.config} does not exist; pass an existing TOML file or drop --config")
    settings, problems = load_settings(path)
    changes: dict[str, Any] = {o.name: getattr(args, o.name) for o in OPTIONS if getattr(args, o.name) is not None}
    mode = _mode_from(args)
    if mode is not None:
        changes["mode"] = mode
    settings = settings.replace(**changes)
    if args.stream:
        _check_stream(settings)
    return settings, problems, path


def _check_stream(settings: Settings) -> None:
    """``--stream`` given where it means nothing: no verifier (local), or no draft (api, --draft none)."""
    if settings.mode == "local":
        raise ConfigError(
            "--stream streams the draft's proposals to a verifier, and local mode has none: "
            "use --demo or --server URL with it, or drop --stream"
        )
    if settings.mode == "api" or settings.draft == "none":
        why = "api mode" if settings.mode == "api" else "--draft none"
        raise ConfigError(
            f"--stream streams the draft's proposals to the verifier, and {why} has no draft (the verifier "
            "streams alone): drop --stream, or use --demo or --server URL with a draft"
        )


def _mode_from(args: argparse.Namespace) -> str | None:
    chosen = [flag for flag in MODE_FLAGS if getattr(args, flag)]
    if args.server is not None and not args.api:
        chosen.append("server")
    if len(chosen) > 1:
        raise ConfigError(f"choose one mode: {' and '.join('--' + c for c in chosen)} exclude each other")
    if args.api:
        return "api"
    if args.server is not None:
        return "remote"
    return chosen[0] if chosen else None


def main(argv: list[str] | None = None) -> int:
    """The program (``argv`` None: the command line, and the process ends here) or a call (tests)."""
    if argv is None:
        _exit_on_sigterm()
    code = run(argv)
    if argv is None:
        leave(code)
    return code


def run(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own one-line usage error
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    if args.version:
        print(f"{PROG} {_version()}")
        return 0
    for name, value in QUIET_LIBRARIES.items():
        os.environ.setdefault(name, value)
    try:
        settings, problems, path = settings_from(args)
        for problem in problems:
            _say(f"warning: {problem}")
        if args.headless:
            return run_headless(settings, args)
        if args.prompt is not None or args.json:
            raise ConfigError("--prompt and --json go with --headless")
        return run_interactive(settings, problems, path)
    except MoaError as exc:
        _say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        _say("stopped")
        return 130
    except Exception as exc:  # a bug, not the user's doing: still one line, the details in a file
        _say(f"internal error: {type(exc).__name__}: {exc} (details in {_write_crash_log()}; please report it)")
        return 2


def _write_crash_log() -> Path:
    """The current exception's traceback, in the cache dir; the file's path."""
    path = cache_dir() / "crash.log"
    with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as log:
        log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} moa-chat {_version()}\n{traceback.format_exc()}\n")
    return path


def run_headless(settings: Settings, args: argparse.Namespace) -> int:
    if not args.prompt:
        raise ConfigError('--headless needs --prompt "your question"')
    link_after = LinkAfter.parse(args.link_after) if args.link_after else None
    if link_after is not None and not needs_demo(settings):
        raise ConfigError("--link-after switches the demo's link; add --demo (or drop --server/--local)")
    with launch(settings, _progress) as launched:
        from app.headless import answer, conversation, report  # torch: after the demo's verifier is spawned

        result = asyncio.run(
            answer(launched.engine, conversation(settings, args.prompt), settings, launched.link, link_after)
        )
        report(result, launched.info, args.json)
    return 0


def run_interactive(settings: Settings, problems: list[str], config_path: Path) -> int:
    if importlib.util.find_spec("app.chat") is None:
        raise ConfigError("the chat UI (app.chat) is not installed; reinstall moa-chat, or use --headless --prompt")
    from app.store import ConversationStore

    store = ConversationStore.open()  # before the demo starts: a store that cannot open fails fast
    try:
        with launch(settings, _progress) as launched:
            try:
                from app.chat import run_app  # Textual: only here, so --headless never loads it
            except ImportError as exc:
                raise ConfigError(
                    f"the chat UI cannot be loaded ({exc}); reinstall moa-chat, or use --headless --prompt '...'"
                ) from exc
            return run_app(launched.engine, store, settings, launched.link, config_path, problems)
    finally:
        store.close()


def _progress(message: str) -> None:
    _say(message)


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl+C does (finally blocks, atexit), so the demo's verifier is stopped."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _version() -> str:
    try:
        return importlib.metadata.version(PROG)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
