"""Benchmark prompts: the chat messages a model answers, from a named set or a JSONL file.

Named sets:

- ``humaneval``: HumanEval's 164 code prompts, each one user message asking for the completion.
- ``sharegpt-heldout``: the first user turn (after its system turn, if any) of each held-out
  ShareGPT conversation (:data:`drafts.data.sharegpt.HELDOUT_SIZE` of them), never trained on.

A ``.jsonl`` file holds one JSON object per line, in any of three shapes:

- MT-bench: ``{"turns": ["question", ...]}`` (the first turn is the prompt);
- plain: ``{"prompt": "question"}``;
- ShareGPT: ``{"conversations": [{"from": "human", "value": "question"}, ...]}`` (messages up
  to the first user turn).

An ``"id"`` or ``"question_id"`` field names the prompt; otherwise its line number does.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from drafts.data.conversations import Turn
from drafts.data.sharegpt import clean_turns, load_sharegpt
from drafts.errors import ConfigError, DatasetError
from drafts.locations import humaneval_jsonl

DATASETS = ("humaneval", "sharegpt-heldout")
ROW_KEYS = ("turns", "prompt", "conversations")
HUMANEVAL_INSTRUCTION = "Complete the following Python function:\n```python\n{prompt}\n```"


@dataclass(frozen=True)
class BenchPrompt:
    """The messages before the model's reply; the last one is the user's."""

    id: str
    messages: tuple[Turn, ...]


def load_prompts(dataset: str, limit: int | None = None, skip: int = 0) -> list[BenchPrompt]:
    """The prompts of a named set (see :data:`DATASETS`) or of a ``.jsonl`` file, first ``limit`` only, after
    leaving out the first ``skip`` (``moa-bench --skip``: tune on prompts a report leaves out)."""
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be at least 1, not {limit}; omit it to use every prompt")
    if skip < 0:
        raise ConfigError(f"--skip takes a prompt count >= 0, got {skip}")
    if dataset == "humaneval":
        prompts = _humaneval()
    elif dataset == "sharegpt-heldout":
        prompts = _sharegpt_heldout()
    else:
        prompts = _jsonl(_prompt_file(dataset))
    if skip and not prompts[skip:]:
        raise ConfigError(f"--skip {skip} leaves no prompt of {dataset}; lower it")
    return prompts[skip:][:limit]


def _humaneval() -> list[BenchPrompt]:
    with gzip.open(humaneval_jsonl(), "rt", encoding="utf-8") as file:
        rows = [json.loads(line) for line in file if line.strip()]
    return [
        BenchPrompt(row["task_id"], (Turn("user", HUMANEVAL_INSTRUCTION.format(prompt=row["prompt"].rstrip())),))
        for row in rows
    ]


def _sharegpt_heldout() -> list[BenchPrompt]:
    return [BenchPrompt(conv.id, _up_to_first_user(conv.turns)) for conv in load_sharegpt("heldout")]


def _prompt_file(dataset: str) -> Path:
    path = Path(dataset).expanduser()
    if path.is_file():
        return path
    if path.suffix in (".jsonl", ".json") or len(path.parts) > 1:
        raise DatasetError(f"prompt file {path} does not exist; check the path")
    raise DatasetError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)} or a path to a .jsonl file")


def _jsonl(path: Path) -> list[BenchPrompt]:
    prompts = []
    with path.open(encoding="utf-8") as file:
        for line_no, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path} line {line_no}: not valid JSON ({exc}); fix or delete the line") from exc
            prompts.append(_row_prompt(row, path, line_no))
    if not prompts:
        raise DatasetError(
            f'{path} has no prompts; each line must be a JSON object with "turns", "prompt" or "conversations"'
        )
    return prompts


def _row_prompt(row: object, path: Path, line_no: int) -> BenchPrompt:
    """One JSONL row as a prompt; a row without a usable user message is an error, not a skip."""
    where = f"{path} line {line_no}"
    if not isinstance(row, dict) or not any(key in row for key in ROW_KEYS):
        raise DatasetError(
            f"{where}: expected a JSON object with one of the keys {', '.join(ROW_KEYS)}; "
            f"found {sorted(row) if isinstance(row, dict) else type(row).__name__}"
        )
    messages: tuple[Turn, ...] = ()
    if "turns" in row:
        turns = row["turns"]
        if isinstance(turns, list) and turns and isinstance(turns[0], str) and turns[0].strip():
            messages = (Turn("user", turns[0]),)
    elif "prompt" in row:
        if isinstance(row["prompt"], str) and row["prompt"].strip():
            messages = (Turn("user", row["prompt"]),)
    else:
        messages = _up_to_first_user(clean_turns(row["conversations"]))
    if not messages:
        raise DatasetError(
            f'{where}: no user message; give a non-empty string in "turns"[0] or "prompt", '
            f'or a "conversations" list with a "human" turn'
        )
    prompt_id = row.get("id", row.get("question_id", line_no))
    return BenchPrompt(str(prompt_id), messages)


def _up_to_first_user(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """The turns up to and including the first user turn; empty if there is none."""
    for index, turn in enumerate(turns):
        if turn.role == "user":
            return turns[: index + 1]
    return ()
