"""Batched decoding on a tiny random Llama: each row as if decoded alone, stops, budgets, seeded sampling."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from drafts.data.batch_decode import Row, decode_batch
from tests.tiny_targets import random_tokens, tiny_model

PROMPT_LENGTHS = (3, 11, 7, 1, 16)


def greedy_alone(model: torch.nn.Module, prompt: Sequence[int], budget: int, stop_ids: Collection[int]) -> list[int]:
    """The reference: one sequence, no cache, no padding, the full forward pass at every step."""
    ids, reply = list(prompt), []
    with torch.no_grad():
        while len(reply) < budget:
            token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            if token in stop_ids:
                break
            reply.append(token)
            ids.append(token)
    return reply


def prompts() -> list[list[int]]:
    return [random_tokens(n, seed=n) for n in PROMPT_LENGTHS]


def test_each_greedy_row_of_a_padded_batch_decodes_as_it_would_alone() -> None:
    model = tiny_model("llama", max_position_embeddings=256)
    rows = [Row(p, max_new_tokens=12) for p in prompts()]

    replies = decode_batch(model, rows, stop_ids=set())

    assert replies == [greedy_alone(model, p, 12, set()) for p in prompts()]


def test_rows_end_at_their_stop_token_or_budget_while_the_others_go_on() -> None:
    model = tiny_model("llama", max_position_embeddings=256)
    budgets = (20, 3, 9, 20, 1)
    free = [greedy_alone(model, p, 20, set()) for p in prompts()]
    stop = {free[0][4]}  # a token the first row meets (others may meet it too, or not)
    rows = [Row(p, max_new_tokens=b) for p, b in zip(prompts(), budgets, strict=True)]

    replies = decode_batch(model, rows, stop_ids=stop)

    assert replies == [greedy_alone(model, p, b, stop) for p, b in zip(prompts(), budgets, strict=True)]
    assert len(replies[0]) <= 4 and all(token not in stop for reply in replies for token in reply)


def test_sampled_rows_repeat_with_the_same_seed_and_leave_greedy_rows_exact() -> None:
    model = tiny_model("llama", max_position_embeddings=256)
    rows = [Row(p, max_new_tokens=10, temperature=1.0 if i % 2 else 0.0) for i, p in enumerate(prompts())]

    first = decode_batch(model, rows, set(), generator=torch.Generator().manual_seed(7))
    again = decode_batch(model, rows, set(), generator=torch.Generator().manual_seed(7))
    other = decode_batch(model, rows, set(), generator=torch.Generator().manual_seed(8))

    assert first == again
    assert [first[i] for i in (1, 3)] != [other[i] for i in (1, 3)]
    assert [first[i] for i in (0, 2, 4)] == [greedy_alone(model, prompts()[i], 10, set()) for i in (0, 2, 4)]
