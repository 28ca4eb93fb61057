"""The remote engine's configuration: built once at the edge (CLI, TOML), validated, then frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from drafts.decoding.resync import ResyncConfig
from drafts.errors import ConfigError


@dataclass(frozen=True)
class LinkConfig:
    """How the client reaches the verifier and notices that it cannot."""

    url: str  # ws://host:port or wss://host:port of moa-server
    token: str | None = None  # bearer token, when the server asks for one (always off loopback)
    # websockets' default keepalive (20 s + 20 s) would take ~40 s to notice a silent dead link.
    # Here: at most interval + timeout + close = 1.75 s after the last pong, for a 6-byte ping
    # every 0.5 s. A reset (or a refused connect) is noticed at once. On a slow link a large frame
    # ahead of a ping in the same TCP stream delays its pong: the timeout must exceed that.
    ping_interval_s: float = 0.5
    ping_timeout_s: float = 1.0
    close_timeout_s: float = 0.25  # a link given up on waits no longer for the closing handshake
    open_timeout_s: float = 2.0  # TCP + WebSocket + Hello/Welcome of one attempt
    backoff_initial_s: float = 0.05  # the first retry comes quickly: most cuts are short
    backoff_max_s: float = 1.0  # later retries at most this far apart
    connect_timeout_s: float = 10.0  # at the start of a generation, give up after this long without a verifier
    # A reply (or, for a Generate, its next part) that takes longer than this: the link is treated
    # as dead (reconnect, resume or replay), so a lost reply can never stall a generation for good.
    # Generous: a long prompt's raw KV over 3g takes tens of seconds.
    reply_timeout_s: float = 60.0
    max_frame_bytes: int = 2**28  # largest frame accepted from the server (a long replay's vectors)
    # LinkChanged(DEGRADED) while the smoothed round trip exceeds this (ONLINE again below 80 % of it).
    degraded_rtt_ms: float = 300.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("ws://", "wss://")):
            raise ConfigError(f"the verifier URL must start with ws:// or wss://, got {self.url!r}")
        for name in (
            "ping_interval_s",
            "ping_timeout_s",
            "close_timeout_s",
            "open_timeout_s",
            "backoff_initial_s",
            "connect_timeout_s",
            "reply_timeout_s",
            "degraded_rtt_ms",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.backoff_max_s < self.backoff_initial_s:
            raise ConfigError("backoff_max_s must be >= backoff_initial_s")


GAMMA_MAX = 16  # the longest chain the pacer sends by default


@dataclass(frozen=True)
class EngineConfig:
    """The remote engine: its link, how long it drafts, and what it does offline."""

    link: LinkConfig
    gamma_min: int = 1  # shortest chain sent for verification
    gamma_max: int = GAMMA_MAX  # longest (the server's max_tree_nodes, and a chain asked, cap it too)
    acceptance_prior: float = 0.6  # per-token acceptance assumed before any round was measured
    offline_model: Path | None = None  # a GGUF model that continues offline (None: the draft alone)
    offline_wait_s: float = 30.0  # after an offline generation is complete, wait this long for the verifier
    # Unverified tokens written offline before writing pauses (OfflineBudgetReached) until the verifier is
    # back: a long outage must not write pages that the repair then deletes.
    offline_budget: int = 256
    stats_interval_s: float = 0.5  # StatsUpdated during a generation, about twice a second
    # At T > 0 each drafted token is sampled from the draft's top-K proposal and sent with it
    # (K int32 ids + K float16 weights: 192 bytes a token at 32; drafts.sparse_proposal), on every
    # link. 0: sample from the full distribution and send no q (deterministic proposals: lossless,
    # fewer tokens accepted).
    q_top_k: int = 32
    device: str = "auto"  # where the draft runs (as on the server: cuda, then mps, then cpu)
    # Speculative streaming (app.engine.stream_generation): the server decodes without waiting and
    # verifies the draft's newest proposal at each step; a server without it gets rounds (Verify).
    stream: bool = False
    # In a stream the server takes a step or more before a proposal reaches it (the part's way here,
    # the draft, the proposal's way there), and a proposal applies only if it spelled those tokens
    # (drafts.proposal_match): its chain (a tree: its depth and node count) is this many tokens
    # longer than the shape's, so that more is left below them. 0: with the shipped draft a lead of 2
    # gave chain 4 tau 1.19 against 1.16 and tree 4,4,16 nothing, for 10-85 % more draft time
    # (s10 proposals/README.md): most proposals are one step late and fail at its token, not deeper.
    stream_lead: int = 0
    # A chain shape's proposals in a stream are a fan (drafts.neural.fan): the draft's top
    # ``stream_width`` guesses for the token the server makes while the proposal travels, a chain
    # below each; the server keeps only the chain below the right guess, so verification costs what
    # one chain does. Chain 4, teacher-forced, one step late, shipped MoA (s11 stream-hits): a
    # proposal applies in 26 % -> 47 % of steps (sharegpt-heldout), tau 1.25 -> 1.39; 1: one chain.
    # A tree shape keeps its own first level (its top-k). Default 1 (one chain): on tokens/s one chain was
    # ahead of the fan of 4 in 4 of 4 pairs of s11's split run (by 2-5 %) and 12 of 16 of s12's (mean +0.05
    # of API's tok/s; s12 stream-lead/README.md): the fan's extra applied steps are its 2nd-4th guesses,
    # whose chains are seldom accepted, each applied step costs the CPU verifier ~1.3 steps, its draft ~1.5x.
    stream_width: int = 1
    # A proposal applies only if it spelled the tokens the server made while it travelled: on lan one
    # (the draft fits inside a server step), on 4g two for most proposals (the server's log: a fan's first
    # use is two late for 58-67 % of its proposals; s12 stream-lead/README.md). 0: the lag measured from the
    # stream (app.engine.lag) and the fan led by it (drafts.neural.fan: the likeliest paths of ``lag``
    # tokens, a chain below each; one chain: lag - 1 tokens deeper); N: assume N. Default 1 (no lead): the
    # lead gains +0.02 tau at two late (simulated, 8 x 64 per data set, the fan of 4) for 30-60 % more draft
    # time, and on tokens/s measured vs 1 was ahead in 8 of 16 split-run pairs, mean -0.003 of API's.
    stream_lag: int = 1
    client_name: str = field(default="moa-chat/0.1.0")  # Hello.client, for the server's logs
    # After a repair that rejected, the offline tokens left propose lookup chains in the next rounds
    # (app.engine.resync_round; the rule: drafts.decoding.resync). MoA draft alone, 140 samples on prompts no
    # rule was chosen on: 8.34 of 32 offline tokens kept (26 %; session 12's rule 5.97; s13 offline-resync/README.md).
    # None: off.
    resync: ResyncConfig | None = ResyncConfig()

    def __post_init__(self) -> None:
        if not 1 <= self.gamma_min <= self.gamma_max:
            raise ConfigError(f"need 1 <= gamma_min <= gamma_max, got {self.gamma_min}, {self.gamma_max}")
        if not 0.0 < self.acceptance_prior < 1.0:
            raise ConfigError(f"acceptance_prior is a probability in (0, 1), got {self.acceptance_prior}")
        if self.offline_model is not None and not self.offline_model.is_file():
            raise ConfigError(
                f"--offline-model {self.offline_model} is not a file; pass a .gguf model "
                "(e.g. the bundled SmolLM2: drafts.locations.smollm2_gguf())"
            )
        if self.offline_wait_s < 0:
            raise ConfigError(f"offline_wait_s must be >= 0, got {self.offline_wait_s}")
        if self.offline_budget < 1:
            raise ConfigError(f"offline_budget must be >= 1 token, got {self.offline_budget}")
        if not 0 <= self.q_top_k <= 4096:
            raise ConfigError(f"q_top_k must be in [0, 4096] (0: send no q), got {self.q_top_k}")
        if not 0 <= self.stream_lead <= 16:
            raise ConfigError(f"stream_lead must be in [0, 16] tokens, got {self.stream_lead}")
        if not 0 <= self.stream_lag <= 3:
            raise ConfigError(f"stream_lag must be in [0, 3] tokens (0: measured), got {self.stream_lag}")
        if not 1 <= self.stream_width <= 16:
            raise ConfigError(f"stream_width must be in [1, 16] chains (1: a single chain), got {self.stream_width}")
        if self.stats_interval_s <= 0:
            raise ConfigError(f"stats_interval_s must be > 0 seconds, got {self.stats_interval_s}")
