"""Run a link shaper and switch its profile live from stdin.

    python -m drafts.net.cli --listen 127.0.0.1:9000 --upstream 127.0.0.1:8765 --profile 4g

Point the client at the --listen address. Then type a profile name and Enter to switch
(lan, wifi, 5g, 4g, 3g, offline); an empty line prints the byte counters; `quit`,
end of input (Ctrl-D) or Ctrl-C stops.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from drafts.errors import ConfigError, MoaError
from drafts.net.link import PRESETS, preset
from drafts.net.shaper import LinkStats
from drafts.net.shaper_thread import ShaperThread


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m drafts.net", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--listen", default="127.0.0.1:9000", help="HOST:PORT clients connect to (port 0: pick a free one)")
    p.add_argument("--upstream", default="127.0.0.1:8765", help="HOST:PORT of the real server")
    p.add_argument("--profile", default="lan", help=f"starting link: {', '.join(PRESETS)} (default lan)")
    p.add_argument("--seed", type=int, default=0, help="seed of jitter and loss")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --listen be a non-loopback address (exposes the upstream server, token or not, to the network)",
    )
    return p


def parse_address(text: str, flag: str) -> tuple[str, int]:
    """``127.0.0.1:9000`` or ``[::1]:9000`` → (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{flag} takes HOST:PORT, e.g. 127.0.0.1:9000 or [::1]:9000; got {text!r}")
    return host.removeprefix("[").removesuffix("]"), int(port)


def format_stats(stats: LinkStats) -> str:
    return (
        f"up {stats.bytes_up:,} B, down {stats.bytes_down:,} B, connections {stats.connections} "
        f"(open {stats.open_connections}, cut {stats.cut_connections})"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        listen_host, listen_port = parse_address(args.listen, "--listen")
        upstream_host, upstream_port = parse_address(args.upstream, "--upstream")
        profile = preset(args.profile)
        link = ShaperThread(
            upstream_host=upstream_host,
            upstream_port=upstream_port,
            profile=profile,
            listen_host=listen_host,
            listen_port=listen_port,
            seed=args.seed,
            allow_remote=args.allow_remote,
        )
        with link:
            listening = f"[{listen_host}]:{link.port}" if ":" in listen_host else f"{listen_host}:{link.port}"
            print(f"shaping {listening} -> {args.upstream} as {profile.describe()}", flush=True)
            switch_from(sys.stdin, link)
    except MoaError as exc:
        print(f"drafts.net: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"drafts.net: error: cannot listen on {args.listen}: {exc}; pick another --listen port", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    print("stopped", flush=True)
    return 0


def switch_from(lines: Iterable[str], link: ShaperThread) -> None:
    """Apply each line as a profile name; print the switch and the counters after each line."""
    for line in lines:
        name = line.strip()
        if name in ("quit", "exit"):
            return
        if name:
            try:
                profile = preset(name)
            except ConfigError as exc:
                print(f"error: {exc}", file=sys.stderr, flush=True)
                continue
            before = link.profile.name
            link.set_profile(profile)
            print(f"{before} -> {profile.describe()}", flush=True)
        print(format_stats(link.stats()), flush=True)
