"""Target activations of training sequences, cached on disk so later epochs and later drafts skip
the target's forward pass (``moa-train --feature-cache DIR``).

One safetensors file per sequence, named by a hash of its token ids; each holds named tensors
(``hidden.<layer>``, ``kv``) in float16. A later run that needs more names (MoA's all-layer K/V
after an EAGLE run cached only the final hidden state) recomputes and merges them. With a cache
every activation is rounded through float16 whether it was a hit or a miss, so a run is the same
function of its data either way (resumption stays exact). The directory records the target's
fingerprint; a cache of another target is refused. A full disk stops the writing (one warning),
never the training.

One directory can serve several drafts at once (MoA's ``kv`` + ``hidden.30``, EAGLE's
``hidden.30``): the manifest lists every name its runs asked for (``names``, added by
:meth:`FeatureCache.wanted`), and a run that misses computes all of them in its one target pass,
so a conversation costs one target forward for every kind, not one per kind. A name a run does
not need is never read (safetensors reads tensors by name). Manifests without ``names`` (older
caches) read as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from drafts.errors import CheckpointError
from drafts.target.activations import ActivationRequest
from drafts.target.loading import TargetFingerprint

MANIFEST = "cache.json"
STORE_DTYPE = torch.float16
KV = "kv"  # every layer's keys/values, (T, L, W)
HIDDEN = "hidden."  # + layer index: hidden_states[layer], (T, H)


def activation_names(request: ActivationRequest) -> set[str]:
    """The cache's names of what ``request`` asks for."""
    return {f"{HIDDEN}{layer}" for layer in request.hidden_layers} | ({KV} if request.all_layer_kv else set())


def activation_request(names: set[str]) -> ActivationRequest:
    """What the target must return to fill ``names`` (the inverse of :func:`activation_names`)."""
    layers = tuple(sorted(int(n.removeprefix(HIDDEN)) for n in names if n.startswith(HIDDEN)))
    return ActivationRequest(layers, KV in names)


class FeatureCache:
    def __init__(self, root: Path, fingerprint: TargetFingerprint) -> None:
        self.root = root
        self.writable = True
        self.hits = self.misses = 0
        self._check_manifest(fingerprint)

    def _check_manifest(self, fingerprint: TargetFingerprint) -> None:
        path = self.root / MANIFEST
        if path.exists():
            recorded = TargetFingerprint.from_dict(json.loads(path.read_text())["target"])
            if recorded != fingerprint:
                raise CheckpointError(
                    f"--feature-cache {self.root} holds activations of {recorded.name} "
                    f"({recorded.num_layers} layers), not of {fingerprint.name} ({fingerprint.num_layers} layers); "
                    "pass another --feature-cache directory"
                )
            return
        self.root.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"target": fingerprint.to_dict(), "dtype": str(STORE_DTYPE)}, indent=2))

    def wanted(self, names: set[str]) -> set[str]:
        """Record ``names`` in the manifest; every name this directory's runs asked for (``names`` included)."""
        path = self.root / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError):
            return set(names)
        recorded = set(manifest.get("names", []))
        if not names <= recorded and self.writable:
            manifest["names"] = sorted(recorded | names)
            with contextlib.suppress(OSError):
                self._replace(path, lambda tmp: tmp.write_text(json.dumps(manifest, indent=2)))
        return recorded | names

    def _path(self, ids: torch.Tensor) -> Path:
        digest = hashlib.sha256(ids.to(torch.int64).cpu().numpy().tobytes()).hexdigest()
        return self.root / digest[:2] / f"{digest[2:34]}.safetensors"

    def get(self, ids: torch.Tensor, names: set[str]) -> dict[str, torch.Tensor] | None:
        """The cached float32 activations of ``ids`` (T,) if every one of ``names`` is there."""
        stored = self._read(self._path(ids), names)
        if stored is None or not names <= stored.keys():
            self.misses += 1
            return None
        self.hits += 1
        return {name: stored[name].float() for name in names}

    def put(self, ids: torch.Tensor, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Store ``tensors`` (merged with what is cached already) and return them rounded as stored."""
        rounded = {name: t.detach().to("cpu", STORE_DTYPE).contiguous() for name, t in tensors.items()}
        if self.writable:
            path = self._path(ids)
            merged = (self._read(path) or {}) | rounded
            self._write(path, merged)
        return {name: t.float().to(tensors[name].device) for name, t in rounded.items()}

    def _read(self, path: Path, names: set[str] | None = None) -> dict[str, torch.Tensor] | None:
        """The tensors of ``path`` (only ``names`` of them, if given and all present)."""
        if not path.exists():
            return None
        try:
            with safe_open(str(path), framework="pt") as f:
                stored = set(f.keys())
                wanted = stored if names is None or not names <= stored else names
                return {name: f.get_tensor(name) for name in wanted}
        except (SafetensorError, OSError):
            return None  # a torn or foreign file: recompute and overwrite it

    def _write(self, path: Path, tensors: dict[str, torch.Tensor]) -> None:
        try:
            path.parent.mkdir(exist_ok=True)
            self._replace(path, lambda tmp: save_file(tensors, str(tmp)))
        except OSError as exc:
            self.writable = False
            print(
                f"moa-train: warning: cannot write to --feature-cache {self.root} ({exc.strerror or exc}); "
                "training goes on without caching. Free disk space or choose another directory to cache again.",
                file=sys.stderr,
            )

    @staticmethod
    def _replace(path: Path, write: Callable[[Path], object]) -> None:
        """``write`` a temporary file of this process, then move it onto ``path`` atomically (several
        runs may share the directory: a reader sees the old file or the new one, never a torn one)."""
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            write(tmp)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
