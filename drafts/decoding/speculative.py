"""The speculative decoding loop (Leviathan et al. 2023; EAGLE-2 trees, Li et al. 2024).

prefill -> [draft -> verify in one target pass -> accept -> commit caches] until a stop.
Each phase is a short verb; ``speculative_rounds`` yields one :class:`RoundEvent` per round so
that a UI or a benchmark consumes the run as it happens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import torch

from drafts.acceptance import Acceptance, accept_tree
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import RoundEvent
from drafts.decoding.generation import Generation
from drafts.decoding.stopping import StopCondition, StopReason
from drafts.drafters.base import Drafter
from drafts.errors import ContextOverflowError
from drafts.sampling import choose
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree


def speculative_rounds(
    runner: TargetRunner,
    drafter: Drafter,
    prompt: list[int],
    config: DecodeConfig,
    gen: Generation,
    session: TargetSession | None = None,
) -> Iterator[RoundEvent]:
    """Generate from ``prompt``; ``gen`` collects the tokens and the stop reason.

    ``session`` continues a conversation: its committed tokens, which the drafter has observed
    too, are a prefix of ``prompt`` (cut back to it beforehand); only the rest is prefilled.
    """
    stop = StopCondition(config.max_new_tokens, runner.stop_ids, config.stop_strings)
    generator = config.sampling.generator()
    session, root, prefill_s = prefill(runner, drafter, prompt, config, generator, session)
    event = RoundEvent(0, (), root, (), (), 0, 0.0, prefill_s, (root,))
    while True:
        event = _apply_stop(event, gen, stop, runner)
        yield event
        if gen.stop is not None:
            return
        context = prompt + gen.tokens
        if len(context) >= runner.context_length:
            gen.stop = StopReason.CONTEXT
            return
        t0 = time.perf_counter()
        tree = _fit(drafter.propose(context, config.shape, config.sampling, generator), runner, session)
        t1 = time.perf_counter()
        acceptance = verify(runner, drafter, session, root, tree, config, generator)
        t2 = time.perf_counter()
        event = _round_event(event.index + 1, tree, acceptance, t1 - t0, t2 - t1)
        root = acceptance.next_token


def prefill(
    runner: TargetRunner,
    drafter: Drafter,
    prompt: list[int],
    config: DecodeConfig,
    generator: torch.Generator,
    session: TargetSession | None = None,
) -> tuple[TargetSession, int, float]:
    """Run the prompt (after what ``session`` holds) through the target; the first token is the first round's root."""
    if len(prompt) >= runner.context_length:
        raise ContextOverflowError(
            f"the prompt has {len(prompt)} tokens but the context holds {runner.context_length}; shorten it"
        )
    t0 = time.perf_counter()
    if session is None:
        session = runner.new_session()
        drafter.begin(prompt)
    new = prompt[_held(session, prompt) :]
    logits = runner.extend(session, new, drafter.needs, last_only=True)  # only the root's logits are read
    acts = runner.commit(session, None, drafter.needs)
    root = choose(logits[-1], config.sampling, generator)
    drafter.observe(new, acts, root)
    return session, root, time.perf_counter() - t0


def _held(session: TargetSession, prompt: list[int]) -> int:
    """Prompt tokens already in ``session`` (at least the last one must run: its logits give the root)."""
    if session.length >= len(prompt):
        raise ValueError(
            f"the session holds {session.length} tokens of a {len(prompt)}-token prompt; "
            "truncate it to a shorter prefix first"
        )
    return session.length


def verify(
    runner: TargetRunner,
    drafter: Drafter,
    session: TargetSession,
    root: int,
    tree: DraftTree,
    config: DecodeConfig,
    generator: torch.Generator,
) -> Acceptance:
    """One target pass over [root, tree]; keep the accepted path; tell the drafter."""
    logits = runner.extend(session, tree.input_ids(root), drafter.needs, tree=tree)  # (N+1, V)
    acceptance = accept_tree(tree, logits, config.sampling, generator)
    keep = [0, *acceptance.path]
    acts = runner.commit(session, keep, drafter.needs)
    committed = [root, *(tree.tokens[i - 1] for i in acceptance.path)]
    drafter.observe(committed, acts, acceptance.next_token)
    return acceptance


def _fit(tree: DraftTree, runner: TargetRunner, session: TargetSession) -> DraftTree:
    """Drop candidates that would overflow the context window.

    The root takes one position and the token after the accepted path one more, so that, like
    plain decoding, the output never runs past the window.
    """
    room = runner.context_length - session.length - 2
    if tree.size <= room:
        return tree
    q = None if tree.q is None else tree.q[:room]
    return DraftTree(tree.tokens[:room], tree.parents[:room], q)


def _round_event(index: int, tree: DraftTree, acc: Acceptance, draft_s: float, verify_s: float) -> RoundEvent:
    accepted = tuple(tree.tokens[i - 1] for i in acc.path)
    last = acc.path[-1] if acc.path else 0
    rejected = tuple(tree.tokens[i - 1] for i in _preferred_chain(tree, last))
    depths = tuple(tree.depths[i] for i in acc.path)
    return RoundEvent(index, accepted, acc.next_token, rejected, depths, tree.size, draft_s, verify_s, ())


def _preferred_chain(tree: DraftTree, node: int) -> list[int]:
    """The drafter's first-choice continuation below ``node`` (what the UI shows as rejected)."""
    chain = []
    while children := tree.children(node):
        node = children[0]
        chain.append(node)
    return chain


def _apply_stop(event: RoundEvent, gen: Generation, stop: StopCondition, runner: TargetRunner) -> RoundEvent:
    """Record the event's tokens in ``gen``, cut at a stop; returns the event with its output."""
    before = len(gen.tokens)
    candidate = gen.tokens + list(event.tokens)
    verdict = stop.check(candidate, runner.decode, new_from=before)
    kept = candidate if verdict is None else candidate[: verdict[0]]
    event = _with_output(event, tuple(kept[before:]))
    gen.add(event)
    if verdict is not None:
        gen.stop = verdict[1]
    return event


def _with_output(event: RoundEvent, output: tuple[int, ...]) -> RoundEvent:
    return replace(event, output=output)


def generate(runner: TargetRunner, drafter: Drafter, prompt: list[int], config: DecodeConfig) -> Generation:
    """Run to completion and return the generation with every round's statistics."""
    gen = Generation(prompt_len=len(prompt))
    t0 = time.perf_counter()
    for _ in speculative_rounds(runner, drafter, prompt, config, gen):
        pass
    gen.wall_s = time.perf_counter() - t0
    return gen
