"""moa-bench --remote's own flags (the benchmark itself runs in tests/app/bench/test_remote.py)."""

from __future__ import annotations

import os

import pytest

from app.bench.cli import _cpus, build_parser
from drafts.errors import ConfigError

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="--server-cpus is Linux-only")


def test_server_cpus_default_is_the_callers_cpus() -> None:
    args = build_parser().parse_args([])
    assert args.server_cpus is None
    assert _cpus(args.server_cpus) is None


def test_server_cpus_reads_a_list_of_this_machines_cpus() -> None:
    mine = sorted(os.sched_getaffinity(0))
    assert _cpus(",".join(map(str, mine))) == set(mine)
    assert _cpus(f"{mine[0]}") == {mine[0]}


@pytest.mark.parametrize("text", ["one", "0,x", "", "100000"])
def test_server_cpus_refuses_what_is_not_a_cpu_here_and_names_the_fix(text: str) -> None:
    with pytest.raises(ConfigError, match="--server-cpus"):
        _cpus(text)
