"""The training loop of ``moa-train``: target activations on the fly, one loss for every draft,
AdamW with warm-up, cosine decay and clipping, atomic checkpoints, and exact resumption.

The budget is tokens, or tokens and minutes (``max_minutes``: whichever runs out first; the cosine
follows the further along of the two, so a timed run on unknown hardware still ends its schedule).

A forward pass takes ``batch`` sequences, right-padded (the padding off the loss mask; the target's
activations of the batch from one pass, each sequence's its own alone's); ``accum`` passes make an
optimizer step. On a GPU batch 1 is launch-bound (16 ran ~4.6x faster on an H200); on a CPU keep 1
(batch 4 ran at ~0.7x batch 1's tokens/s on one core here).

The run is a pure function of its configuration: the data order comes from the seed, the random
draws (verification periods, staircase masks, EAGLE's noise) from one saved generator, so an
interrupted run resumed with ``--resume`` ends with the same weights as an uninterrupted one
(a run with ``max_minutes`` is not: where its schedule stands depends on the machine's speed).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from drafts.data.conversations import Conversation
from drafts.errors import CheckpointError, ConfigError
from drafts.neural.base import NeuralDraft, TrainBatch
from drafts.target.activations import ActivationRequest
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import save_draft
from drafts.training.feature_cache import HIDDEN, KV, FeatureCache, activation_names, activation_request
from drafts.training.losses import LossWeights, distillation_loss
from drafts.training.prefetch import Prefetcher
from drafts.training.tokenize import Sequence, tokenize_conversation

STATE_FILE = "trainer_state.pt"


@dataclass(frozen=True)
class TrainConfig:
    tokens: int  # training budget: sequence tokens through the draft (prompt tokens included)
    max_len: int = 512  # tokens per sequence (long conversations are cut)
    lr: float = 1e-3  # peak learning rate (small drafts, few steps: a high peak, then cosine)
    warmup_steps: int = 30
    min_lr_ratio: float = 0.1  # cosine decays to lr * this
    clip: float = 1.0  # gradient norm clipping, as MoA and EAGLE
    accum: int = 2  # forward passes per optimizer step
    batch: int = 1  # sequences per forward pass, right-padded (a GPU's throughput; 1 on a CPU)
    checkpoint_every: int = 50  # optimizer steps between checkpoints
    seed: int = 0
    weights: LossWeights = field(default_factory=LossWeights)
    align_steps: int = 1  # HASS context alignment: training steps per sequence (1: off; HASS uses 3)
    max_minutes: float | None = None  # also stop after this much training time (steps only, loading excluded)

    def __post_init__(self) -> None:
        if self.align_steps < 1:
            raise ConfigError(f"--align-steps {self.align_steps}: give 1 (off) or more (HASS trains 3)")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ConfigError(f"--max-minutes {self.max_minutes}: give a positive number of minutes, or leave it out")
        if self.batch < 1 or self.accum < 1:
            raise ConfigError(f"--batch {self.batch} --accum {self.accum}: give 1 or more of each")

    def progress(self, tokens_seen: int, wall_s: float) -> float:
        """How far the schedule is, in [0, 1]: the larger of the token budget's share and the time budget's."""
        by_time = 0.0 if self.max_minutes is None else wall_s / (60 * self.max_minutes)
        return min(1.0, max(tokens_seen / self.tokens, by_time))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainState:
    step: int = 0  # optimizer steps done
    tokens_seen: int = 0
    cursor: int = 0  # index into the shuffled conversations
    epoch: int = 0
    wall_s: float = 0.0
    last: dict[str, float] = field(default_factory=dict)  # latest smoothed statistics


class Trainer:
    def __init__(
        self,
        model: NeuralDraft,
        runner: TargetRunner,
        conversations: list[Conversation],
        cfg: TrainConfig,
        out: Path,
        cache: FeatureCache | None = None,
    ) -> None:
        self.model, self.runner, self.cfg, self.out, self.cache = model, runner, cfg, out, cache
        self.conversations = conversations
        tail = () if model.tail_input_layer is None else (model.tail_input_layer,)
        self.request = model.needs.union(ActivationRequest(hidden_layers=(runner.num_layers, *tail)))
        self.names = activation_names(self.request)
        if cache is not None:
            cache.wanted(self.names)  # a run sharing the directory computes these for us too
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.state = TrainState()
        self.prefetch = Prefetcher(self._tokenize)
        self._orders: dict[int, list[int]] = {}  # epoch -> its shuffled conversation indices

    # -- state ---------------------------------------------------------------------------
    def resume(self) -> None:
        path = self.out / STATE_FILE
        if not path.exists():
            raise CheckpointError(f"--resume: {path} does not exist; start without --resume")
        saved = torch.load(path, weights_only=False)
        self.model.load_state_dict(saved["model"], strict=True)
        self.optimizer.load_state_dict(saved["optimizer"])
        self.generator.set_state(saved["generator"])
        self.state = TrainState(**saved["state"])

    def save(self, training_info: dict[str, Any]) -> None:
        save_draft(self.out, self.model, self.runner.fingerprint, training_info | {"state": asdict(self.state)})
        blob = {
            "model": {k: v for k, v in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "state": asdict(self.state),
        }
        tmp = self.out / (STATE_FILE + ".tmp")
        torch.save(blob, tmp)
        os.replace(tmp, self.out / STATE_FILE)

    # -- loop ----------------------------------------------------------------------------
    def run(
        self, training_info: dict[str, Any], on_step: Callable[[TrainState, int], None] = lambda s, n: None
    ) -> TrainState:
        self.model.train()
        while self.cfg.progress(self.state.tokens_seen, self.state.wall_s) < 1.0:
            t0 = time.perf_counter()
            n_tokens = self._optimizer_step()
            self.state.wall_s += time.perf_counter() - t0
            on_step(self.state, n_tokens)
            if self.state.step % self.cfg.checkpoint_every == 0:
                self.save(training_info)
        self.save(training_info)
        return self.state

    def _optimizer_step(self) -> int:
        self._set_lr()
        self.optimizer.zero_grad(set_to_none=True)
        n_tokens, stats = 0, []
        for _ in range(self.cfg.accum):
            seqs = [self._next_sequence() for _ in range(self.cfg.batch)]
            self.prefetch.ahead(self._upcoming(2 * self.cfg.batch))  # tokenized while this batch computes
            loss, s = self._loss(seqs)
            (loss / self.cfg.accum).backward()
            n_tokens += sum(len(seq.ids) for seq in seqs)
            stats.append(s)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)
        self.optimizer.step()
        self.state.step += 1
        self.state.tokens_seen += n_tokens
        self._smooth({k: sum(s[k] for s in stats) / len(stats) for k in stats[0]})
        return n_tokens

    def _loss(self, seqs: list[Sequence]) -> tuple[torch.Tensor, dict[str, float]]:
        batch = self._batch(seqs)
        progress = min(1.0, self.state.tokens_seen / self.cfg.tokens)
        if self.cfg.align_steps > 1:
            return self._aligned_loss(batch, progress)
        pred, tail_pred = self.model.predict_features(batch, progress, self.generator)
        tail = None if tail_pred is None or batch.target_tail_input is None else (tail_pred, batch.target_tail_input)
        return distillation_loss(
            pred, batch.target_hidden, batch.loss_mask, self.model.parts, self.cfg.weights, tail_input=tail
        )

    def _aligned_loss(self, batch: TrainBatch, progress: float) -> tuple[torch.Tensor, dict[str, float]]:
        """HASS: the sum of every alignment step's loss; statistics of step 1, plus each step's top-1."""
        preds = self.model.predict_aligned(batch, progress, self.generator, self.cfg.align_steps)
        total: torch.Tensor | None = None
        stats: dict[str, float] = {}
        for j, pred in enumerate(preds, start=1):
            loss, s = distillation_loss(pred, batch.target_hidden, batch.loss_mask, self.model.parts, self.cfg.weights)
            total = loss if total is None else total + loss
            stats = s if j == 1 else stats | {f"top1.{j}": s["top1"]}
        assert total is not None
        return total, stats | {"loss": total.item()}

    def _batch(self, seqs: list[Sequence]) -> TrainBatch:
        """The sequences right-padded into one batch (the padding off the loss mask) with the target's
        activations (from the feature cache, or computed; no gradient)."""
        acts = self._activations(seqs)
        device = self.runner.device

        def padded(name: str) -> torch.Tensor:  # (B, T, ...) zeros after each sequence's end
            return pad_sequence([a[name] for a in acts], batch_first=True)

        kv = padded(KV) if KV in acts[0] else None  # (B, T, L, W)
        layer = self.model.tail_input_layer
        tail = None if layer is None else padded(f"{HIDDEN}{layer}")  # (B, T, H): TLI layer input
        ids = pad_sequence([seq.ids for seq in seqs], batch_first=True).to(device)  # (B, T)
        mask = pad_sequence([seq.loss_mask for seq in seqs], batch_first=True).to(device)  # (B, T), False after
        return TrainBatch(ids, mask, padded(f"{HIDDEN}{self.runner.num_layers}"), kv, tail)

    def _activations(self, seqs: list[Sequence]) -> list[dict[str, torch.Tensor]]:
        """Named activations of each sequence: ``hidden.<layer>`` (T, H) and ``kv`` (T, L, W)."""
        if self.cache is None:
            return self._target_activations(seqs, self.request)
        found = [self.cache.get(seq.ids, self.names) for seq in seqs]
        missing = [seq for seq, hit in zip(seqs, found, strict=True) if hit is None]
        if missing:  # everything the directory's runs want, from one target pass (the same values as ours alone)
            request = self.request.union(activation_request(self.cache.wanted(self.names)))
            computed = iter(self._target_activations(missing, request))
            found = [
                hit if hit is not None else self.cache.put(seq.ids, next(computed))
                for seq, hit in zip(seqs, found, strict=True)
            ]
        return [{name: t[name].to(self.runner.device) for name in self.names} for t in found if t is not None]

    def _target_activations(self, seqs: list[Sequence], request: ActivationRequest) -> list[dict[str, torch.Tensor]]:
        computed = []
        for acts in self.runner.prefill_activations([seq.ids.tolist() for seq in seqs], request):
            named = {f"{HIDDEN}{layer}": h.clone() for layer, h in acts.hidden.items()}  # out of inference mode
            if acts.kv is not None:
                named[KV] = acts.kv.clone()
            computed.append(named)
        return computed

    def _next_sequence(self) -> Sequence:
        while True:
            order = self._order(self.state.epoch)
            if self.state.cursor >= len(order):
                self.state.epoch, self.state.cursor = self.state.epoch + 1, 0
                continue
            index = order[self.state.cursor]
            self.state.cursor += 1
            seq = self.prefetch.get(index)
            if seq is not None:
                return seq

    def _tokenize(self, index: int) -> Sequence | None:
        return tokenize_conversation(self.runner.tokenizer, self.conversations[index], self.cfg.max_len)

    def _upcoming(self, count: int) -> list[int]:
        """The indices of the next ``count`` conversations the run will read (the state untouched)."""
        epoch, cursor = self.state.epoch, self.state.cursor
        found: list[int] = []
        while len(found) < count and self.conversations:
            order = self._order(epoch)
            take = order[cursor : cursor + count - len(found)]
            found += take
            epoch, cursor = (epoch + 1, 0) if cursor + len(take) >= len(order) else (epoch, cursor + len(take))
        return found

    def _order(self, epoch: int) -> list[int]:
        """Epoch ``epoch``'s shuffled conversation indices (this epoch's and the next are kept)."""
        orders = self._orders
        if epoch not in orders:
            order = list(range(len(self.conversations)))
            random.Random(self.cfg.seed * 1000 + epoch).shuffle(order)
            for old in [e for e in orders if e < epoch - 1]:
                del orders[old]
            orders[epoch] = order
        return orders[epoch]

    def _set_lr(self) -> None:
        cfg, step = self.cfg, self.state.step
        if step < cfg.warmup_steps:
            lr = cfg.lr * (step + 1) / cfg.warmup_steps
        else:
            progress = cfg.progress(self.state.tokens_seen, self.state.wall_s)
            lr = cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def _smooth(self, stats: dict[str, float], beta: float = 0.9) -> None:
        last = self.state.last
        self.state.last = {k: v if k not in last else beta * last[k] + (1 - beta) * v for k, v in stats.items()}
