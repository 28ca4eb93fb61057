"""Every setting once: its default, what it means, and what values it allows.

The TOML file, the command line and the settings screen all read this table, so a key of the
file, its flag (``max_tokens`` is ``--max-tokens``) and its message on a bad value never drift
apart. Checks are pure functions of the value: whether a file exists is the engine's business.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drafts.errors import ConfigError
from drafts.net.link import PRESETS
from drafts.neural.kinds import KIND_NAMES

# As drafts.target.device.DEVICE_CHOICES (a test checks): not imported from there, because that
# imports torch, and moa-chat starts the demo's verifier before it imports torch (saves seconds).
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
LINEAR_CHOICES = ("auto", "packed", "dense")  # as drafts.target.packed_linear.LINEAR_CHOICES (a test checks)

MODES = ("demo", "remote", "local", "api")
DRAFT_KINDS = (*KIND_NAMES, "none")


@dataclass(frozen=True)
class Option:
    name: str  # the TOML key; the flag is --name-with-dashes
    default: Any
    help: str  # one line, written above the key in the file and shown by --help
    allowed: str  # what a bad value's message says is allowed
    check: Callable[[Any], bool]  # the value (already of the right type) is allowed
    kind: type  # str, int, float or bool: the TOML type (an int is taken for a float; a bool is a switch)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def coerce(self, value: Any) -> Any:
        """``value`` as this option's type, or a ConfigError naming the key, the value and what is allowed."""
        typed = _typed(value, self.kind)
        if typed is None or not self.check(typed):
            raise ConfigError(f"{self.name} = {value!r} is not allowed: {self.name} takes {self.allowed}")
        return typed


def _typed(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or kind is bool:  # TOML true/false is a switch's value, never a number or a name
        return value if isinstance(value, bool) and kind is bool else None
    if kind is float and isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    return value if isinstance(value, kind) else None


def _is_tree(text: str) -> bool:
    if not text:
        return True
    from drafts.drafters.base import DraftShape  # torch: only when a tree is given

    try:
        DraftShape.parse_tree(text)
    except ConfigError:
        return False
    return True


def _is_offline_model(text: str) -> bool:
    return text in ("bundled", "none") or text.endswith(".gguf")


OPTIONS: tuple[Option, ...] = (
    # -- the conversation -----------------------------------------------------------------------
    Option("system_prompt", "", "system prompt of new chats", "any text", lambda v: True, str),
    Option(
        "temperature",
        0.0,
        "0 = greedy (drafts are accepted most often); higher = more varied",
        "a number from 0 to 2",
        lambda v: 0.0 <= v <= 2.0,
        float,
    ),
    Option(
        "top_p", 1.0, "nucleus sampling mass (1 = off)", "a number above 0, at most 1", lambda v: 0.0 < v <= 1.0, float
    ),
    Option(
        "max_tokens", 512, "longest answer, in tokens", "an integer from 1 to 32768", lambda v: 1 <= v <= 32768, int
    ),
    Option(
        "chain",
        0,
        "draft shape: a chain of at most G tokens per round (as moa-bench --chain); 0: the best measured for "
        "where the target runs (tree 3,4,8 for --local on a CPU; remote: tree 4,4,16 on a CPU verifier, "
        "6,10,100 on a GPU one)",
        "0 or an integer from 1 to 64",
        lambda v: 0 <= v <= 64,
        int,
    ),
    Option(
        "tree",
        "",
        'draft shape: an EAGLE-2 tree DEPTH,TOPK,TOTAL instead of a chain ("": as chain says)',
        'DEPTH,TOPK,TOTAL integers >= 1 such as "4,4,16", or "" for a chain',
        _is_tree,
        str,
    ),
    Option(
        "offline_budget",
        256,
        "unverified tokens written offline before writing waits for the verifier",
        "an integer from 1 to 100000",
        lambda v: 1 <= v <= 100_000,
        int,
    ),
    Option(
        "theme",
        "textual-dark",
        "the app's colour theme (a Textual theme name)",
        'a theme name such as "textual-dark", "textual-light", "nord", "gruvbox"',
        lambda v: bool(v.strip()),
        str,
    ),
    # -- how the app starts ---------------------------------------------------------------------
    Option(
        "mode",
        "demo",
        "demo (everything here, shaped link), remote (--server), local (no network), api (no draft)",
        f"one of {', '.join(MODES)}",
        lambda v: v in MODES,
        str,
    ),
    Option(
        "server",
        "",
        "the verifier's URL for remote (and api) mode",
        '"" or a ws:// or wss:// URL',
        lambda v: v == "" or v.startswith(("ws://", "wss://")),
        str,
    ),
    Option("token_file", "", "file holding the verifier's bearer token", '"" or a file path', lambda v: True, str),
    Option(
        "draft_quantize",
        "int8",
        "int8: on a CPU the draft runs int8 layers (a drafted token costs ~1/3; MoA keeps its acceptance); none: fp32",
        "int8 or none",
        lambda v: v in ("int8", "none"),
        str,
    ),
    Option(
        "target_linear",
        "auto",
        "--local: the target's Linear layers; auto packs them for oneDNN on a CPU in float32 (plain decoding ~1.3x "
        "faster, the same output); dense: PyTorch's own kernels",
        f"one of {', '.join(LINEAR_CHOICES)}",
        lambda v: v in LINEAR_CHOICES,
        str,
    ),
    Option(
        "stream",
        False,
        "speculative streaming (demo, remote): the verifier decodes without waiting, as an API streams, and checks "
        "the draft's proposals on the way (on 4g ~1.3x the tokens/s of rounds, at or above an API's)",
        "true or false",
        lambda v: True,
        bool,
    ),
    Option(
        "draft",
        "moa",
        "the draft: moa, eagle, independent, none, or a checkpoint directory",
        f"one of {', '.join(DRAFT_KINDS)} or a checkpoint directory",
        lambda v: bool(v.strip()),
        str,
    ),
    Option(
        "target",
        "smollm2",
        "the target model: smollm2, gemma3-270m, a .gguf file or a model directory",
        "an alias (smollm2, gemma3-270m), a .gguf file or a model directory",
        lambda v: bool(v.strip()),
        str,
    ),
    Option(
        "device",
        "auto",
        "where the draft (and, locally, the target) runs",
        f"one of {', '.join(DEVICE_CHOICES)}",
        lambda v: v.split(":")[0] in DEVICE_CHOICES,
        str,
    ),
    Option(
        "offline_model",
        "bundled",
        "what writes offline: bundled (the SmolLM2 GGUF), none (the draft alone), or a .gguf file",
        "bundled, none, or a path ending in .gguf",
        _is_offline_model,
        str,
    ),
    Option("link", "lan", "the demo's starting link", f"one of {', '.join(PRESETS)}", lambda v: v in PRESETS, str),
)

BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
