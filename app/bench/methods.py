"""The remote benchmark's method names, and the engine settings each one means.

moa, eagle, independent   a draft kind (drafts.neural.kinds): round-based speculation
KIND:noq                  ... sending no q at T > 0 (EngineConfig.q_top_k = 0)
KIND-stream               speculative streaming (EngineConfig.stream)
KIND-stream+N             ... with proposals N tokens deeper (EngineConfig.stream_lead)
KIND-stream~L             ... proposals drafted for a lag of L tokens (EngineConfig.stream_lag; ~0: measured)
KIND-stream@W             ... a chain shape proposing W chains, one per top guess (EngineConfig.stream_width;
                          after a lead and a lag, in that order: KIND-stream+N~L@W)
api                       API streaming: the server decodes alone (no draft here)
gguf                      the disconnection study's extra row: MoA continuing offline with a GGUF model
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from app.engine.config import EngineConfig, LinkConfig
from drafts.errors import ConfigError
from drafts.neural.kinds import KIND_NAMES

DRAFT_METHODS = KIND_NAMES  # every declared kind (drafts.neural.kinds)
API = "api"  # API streaming: the server decodes alone (no draft here)
GGUF = "gguf"  # the disconnection study's extra row: the MoA engine continuing offline with a GGUF model
NO_Q = ":noq"  # a draft method with this suffix sends no q at T > 0 (EngineConfig.q_top_k = 0)
STREAM = "-stream"  # a draft kind with this suffix streams speculatively (EngineConfig.stream)
LEAD = "+"  # a stream method, then "+N": its proposals N tokens deeper (EngineConfig.stream_lead)
WIDTH = "@"  # a stream method, then "@W": a chain shape's proposals are W chains (EngineConfig.stream_width)
LAG = "~"  # a stream method, then "~L": its proposals drafted for a lag of L tokens (EngineConfig.stream_lag)


def check_method(method: str) -> None:
    """Raise ConfigError naming the known methods unless ``method`` is one."""
    if draft_kind(method) not in DRAFT_METHODS and method != API:
        known = ", ".join((*DRAFT_METHODS, API)) + f" (a draft kind may end in {STREAM!r}: speculative "
        known += f"streaming, then {LEAD!r}N: proposals N tokens deeper, {LAG!r}L: drafted for a lag of L "
        known += f"tokens, {WIDTH!r}W: W chains wide, "
        known += f"and in {NO_Q!r}: no q at T > 0)"
        raise ConfigError(f"unknown remote method {method!r}; choose from {known}")
    if LEAD in method and (not is_stream(method) or stream_lead(method) is None):
        raise ConfigError(f"{method!r}: only a stream method takes a lead, as a whole number (e.g. moa-stream+2)")
    if WIDTH in method and (not is_stream(method) or not 1 <= (stream_width(method) or 0) <= 16):
        raise ConfigError(f"{method!r}: only a stream method takes a width, 1 to 16 chains (e.g. moa-stream@4)")
    lag = stream_lag(method)
    if LAG in method and (not is_stream(method) or lag is None or lag > 3):
        raise ConfigError(f"{method!r}: only a stream method takes a lag, 0 to 3 tokens (moa-stream~1; ~0: measured)")


def draft_kind(method: str) -> str:
    """The draft kind of a method name ("moa:noq" -> "moa", "moa-stream" -> "moa", "moa-stream+2" -> "moa")."""
    return _plain(method).removesuffix(NO_Q).removesuffix(STREAM)


def is_stream(method: str) -> bool:
    return _plain(method).removesuffix(NO_Q).endswith(STREAM)


def stream_lead(method: str) -> int | None:
    """N of a method "...-stream+N" (None: the engine's default lead)."""
    _, sep, lead = method.partition(WIDTH)[0].partition(LAG)[0].partition(LEAD)
    return int(lead) if sep and lead.isdigit() else None


def stream_lag(method: str) -> int | None:
    """L of a method "...-stream~L" (None: the engine's default, the lag measured)."""
    _, sep, lag = method.partition(WIDTH)[0].partition(LAG)
    return int(lag) if sep and lag.isdigit() else None


def stream_width(method: str) -> int | None:
    """W of a method "...-stream@W" (None: the engine's default width)."""
    _, sep, width = method.partition(WIDTH)
    return int(width) if sep and width.isdigit() else None


def q_top_k(method: str, default: int) -> int:
    """The q entries a method sends per drafted token at T > 0 (none for "...:noq")."""
    return 0 if _plain(method).endswith(NO_Q) else default


def engine_config(
    port: int, offline_model: Path | None = None, chain: int | None = None, q_top_k: int = 32, stream: bool = False
) -> EngineConfig:
    """The engine of one method, on the shaper at ``port``; ``chain`` fixes the chain length (else paced)."""
    link = LinkConfig(f"ws://127.0.0.1:{port}")
    if chain is None:
        return EngineConfig(link, offline_model=offline_model, q_top_k=q_top_k, stream=stream)
    return EngineConfig(
        link, gamma_min=chain, gamma_max=chain, offline_model=offline_model, q_top_k=q_top_k, stream=stream
    )


def with_stream_options(engine: EngineConfig, method: str) -> EngineConfig:
    """``engine`` with the method's proposal lead, lag and width, where it names them."""
    lead, lag, width = stream_lead(method), stream_lag(method), stream_width(method)
    engine = engine if lead is None else replace(engine, stream_lead=lead)
    engine = engine if lag is None else replace(engine, stream_lag=lag)
    return engine if width is None else replace(engine, stream_width=width)


def _plain(method: str) -> str:
    return method.partition(WIDTH)[0].partition(LAG)[0].partition(LEAD)[0]
