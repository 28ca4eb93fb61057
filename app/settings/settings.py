"""Settings: the chat's preferences and the launch options, one frozen value validated at construction.

Built at the edge (:mod:`app.settings.file` reads the TOML file, :mod:`app.cli` merges the
flags), then passed down. The fields and their rules live once, in :mod:`app.settings.options`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.settings.options import BY_NAME, OPTIONS

if TYPE_CHECKING:  # torch: imported when a DecodeConfig is built, not when the settings are read
    from drafts.decoding.config import DecodeConfig
    from drafts.drafters.base import DraftShape
    from drafts.sampling import SamplingConfig


@dataclass(frozen=True)
class Settings:
    # the conversation
    system_prompt: str = BY_NAME["system_prompt"].default
    temperature: float = BY_NAME["temperature"].default
    top_p: float = BY_NAME["top_p"].default
    max_tokens: int = BY_NAME["max_tokens"].default
    chain: int = BY_NAME["chain"].default  # draft shape: chain length G (0: default_shape())
    tree: str = BY_NAME["tree"].default  # draft shape: "DEPTH,TOPK,TOTAL", or "" for a chain
    offline_budget: int = BY_NAME["offline_budget"].default
    theme: str = BY_NAME["theme"].default
    # how the app starts
    mode: str = BY_NAME["mode"].default
    server: str = BY_NAME["server"].default
    token_file: str = BY_NAME["token_file"].default
    draft_quantize: str = BY_NAME["draft_quantize"].default
    target_linear: str = BY_NAME["target_linear"].default
    stream: bool = BY_NAME["stream"].default  # speculative streaming (EngineConfig.stream); drafted remote modes
    draft: str = BY_NAME["draft"].default
    target: str = BY_NAME["target"].default
    device: str = BY_NAME["device"].default
    offline_model: str = BY_NAME["offline_model"].default
    link: str = BY_NAME["link"].default

    def __post_init__(self) -> None:
        for option in OPTIONS:  # a ConfigError names the key, the value and what is allowed
            object.__setattr__(self, option.name, option.coerce(getattr(self, option.name)))

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {option.name: getattr(self, option.name) for option in OPTIONS}

    @property
    def shape(self) -> DraftShape:
        """The tree asked, else the chain asked, else the default for where the target runs."""
        from drafts.drafters.base import DraftShape

        if self.tree:
            return DraftShape.parse_tree(self.tree)
        return DraftShape(gamma=self.chain) if self.chain else self.default_shape()

    def default_shape(self) -> DraftShape:
        """``chain = 0``, no tree: the best measured shape for where the target runs
        (:mod:`drafts.target.default_shape`): for ``--local`` this device's shape (tree 3,4,8 with the packed
        target on a CPU, else chain 4); otherwise ``VERIFIER_DEFAULT``, which the remote engine turns into the
        tree for the verifier's device once its Welcome says it."""
        from drafts.drafters.base import DraftShape
        from drafts.errors import ConfigError
        from drafts.target.default_shape import DEFAULT_CHAIN, VERIFIER_DEFAULT, local_shape
        from drafts.target.device import default_dtype, resolve_device

        if self.mode != "local":
            return VERIFIER_DEFAULT
        try:
            device = resolve_device(self.device)
            return local_shape(device, default_dtype(device), self.target_linear)
        except ConfigError:  # a device this machine lacks: the local engine says so when it loads
            return DraftShape(gamma=DEFAULT_CHAIN)

    @property
    def sampling(self) -> SamplingConfig:
        from drafts.sampling import SamplingConfig

        return SamplingConfig(temperature=self.temperature, top_p=self.top_p)

    def decode_config(self) -> DecodeConfig:
        """How the next answer is decoded."""
        from drafts.decoding.config import DecodeConfig

        return DecodeConfig(max_new_tokens=self.max_tokens, sampling=self.sampling, shape=self.shape)

    @property
    def token_path(self) -> Path | None:
        return Path(self.token_file).expanduser() if self.token_file else None
