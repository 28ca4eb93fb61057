"""Session 25: session 12's ``cpu_speed.py`` with ``--before`` meaning the packed weights' plain layout.

Sessions 7-24 packed each target weight with ``to_mkldnn()`` (a plain layout, re-laid out by oneDNN on every
multi-row call); session 25 lays it out once for 64 rows (``drafts/target/packed_linear.py``). Here every
``PackedLinear`` also keeps the plain copy, and the methods named by ``--before`` run on it (``ar@before``,
``moa24-int8-tree3,4,8@before``), in the same per-prompt rotation as the rest, against the same target.
Arguments as ``cpu_speed.py``'s:

    taskset -c 1 env HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python3 \
        drafts/bench/results/2026-12-04-s25/cpu-speed/cpu_speed_layout.py --draft moa24-int8=runs/cpu-speed/moa24-int8 \
        --methods moa24-int8:3,4,8 moa24-int8:4,4,10 --before ar moa24-int8:3,4,8 --limit 16 --json OUT.json
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02-s12" / "cpu-speed"))
import cpu_speed  # noqa: E402  (session 12's script, from its folder)
import round_parts  # noqa: E402

from drafts.target.packed_linear import PackedLinear  # noqa: E402

_laid_out_init = PackedLinear.__init__


def _init_keeping_the_plain_copy(self: PackedLinear, linear: nn.Linear, keep_dense: bool = True) -> None:
    _laid_out_init(self, linear, keep_dense)
    self.plain_weight = linear.weight.detach().to_mkldnn()  # (out, in): sessions 7-24's copy


def plain_layout_forward(self: PackedLinear, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
    return torch.ops.mkldnn._linear_pointwise(x, self.plain_weight, self.packed_bias, "none", [], "")


PackedLinear.__init__ = _init_keeping_the_plain_copy  # type: ignore[method-assign]
round_parts.LINEAR["before"] = plain_layout_forward  # the dict cpu_speed.py reads per method

if __name__ == "__main__":
    sys.argv[0] = "drafts/bench/results/2026-12-04-s25/cpu-speed/cpu_speed_layout.py"
    sys.exit(cpu_speed.main())
