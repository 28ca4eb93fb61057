"""The session registry: capacity, resume, grace expiry, takeover, per-session generators."""

from __future__ import annotations

import asyncio

import pytest
import torch

from drafts.protocol import Needs
from drafts.sampling import SamplingConfig
from server_stub.errors import ServerBusyError
from server_stub.sessions import SessionRegistry

NEEDS = Needs(all_layer_kv=True)


class FakeOwner:
    def __init__(self) -> None:
        self.superseded = False

    def supersede(self) -> None:
        self.superseded = True


def registry(max_sessions: int = 4, grace: float = 10.0) -> tuple[SessionRegistry, list[str]]:
    expired: list[str] = []
    return SessionRegistry(max_sessions, grace, expired.append), expired


def test_session_ids_are_distinct_and_unguessable() -> None:
    sessions, _ = registry()

    ids = {sessions.new(NEEDS, FakeOwner()).session_id for _ in range(4)}

    assert len(ids) == 4 and all(len(i) > 16 for i in ids)


def test_when_full_the_oldest_detached_session_makes_room_and_else_it_is_busy() -> None:
    async def scenario() -> None:
        sessions, expired = registry(max_sessions=2)
        first = sessions.new(NEEDS, FakeOwner())
        sessions.new(NEEDS, FakeOwner())
        with pytest.raises(ServerBusyError, match="--max-sessions"):
            sessions.new(NEEDS, FakeOwner())

        sessions.detach(first)
        sessions.new(NEEDS, FakeOwner())

        assert expired == [first.session_id] and len(sessions) == 2

    asyncio.run(scenario())


def test_a_detached_session_resumes_within_the_grace_period_and_expires_after_it() -> None:
    async def scenario() -> None:
        sessions, expired = registry(grace=0.05)
        kept, lost = sessions.new(NEEDS, FakeOwner()), sessions.new(NEEDS, FakeOwner())
        sessions.detach(kept)
        sessions.detach(lost)

        assert sessions.resume(kept.session_id, NEEDS, FakeOwner()) is kept
        await asyncio.sleep(0.15)

        assert expired == [lost.session_id]
        assert sessions.resume(lost.session_id, NEEDS, FakeOwner()) is None
        assert sessions.get(kept.session_id) is kept

    asyncio.run(scenario())


def test_a_resume_with_other_needs_is_not_the_same_session() -> None:
    sessions, _ = registry()
    record = sessions.new(NEEDS, FakeOwner())

    assert sessions.resume(record.session_id, Needs(), FakeOwner()) is None


def test_resuming_an_attached_session_supersedes_its_old_connection() -> None:
    sessions, _ = registry()
    old, new = FakeOwner(), FakeOwner()
    record = sessions.new(NEEDS, old)

    sessions.resume(record.session_id, NEEDS, new)

    assert old.superseded and record.owner is new


def test_a_new_seed_reseeds_the_sessions_generator_and_the_same_seed_does_not() -> None:
    sessions, _ = registry()
    record = sessions.new(NEEDS, FakeOwner())
    seeded = SamplingConfig(temperature=1.0, seed=42)

    first = torch.rand(3, generator=SessionRegistry.generator(record, seeded))
    second = torch.rand(3, generator=SessionRegistry.generator(record, seeded))
    record.seed = None  # a different seed was seen in between
    again = torch.rand(3, generator=SessionRegistry.generator(record, seeded))

    assert not torch.equal(first, second) and torch.equal(first, again)


def test_one_client_at_its_limit_is_busy_while_another_client_still_gets_sessions() -> None:
    async def scenario() -> None:
        sessions = SessionRegistry(8, 10.0, lambda _: None, per_client=2)
        greedy = [sessions.new(NEEDS, FakeOwner(), "10.0.0.1") for _ in range(2)]
        with pytest.raises(ServerBusyError, match="--max-sessions-per-client"):
            sessions.new(NEEDS, FakeOwner(), "10.0.0.1")
        assert sessions.new(NEEDS, FakeOwner(), "10.0.0.2").client == "10.0.0.2"
        sessions.detach(greedy[0])  # its own detached session makes room for it, not someone else's
        third = sessions.new(NEEDS, FakeOwner(), "10.0.0.1")
        assert sessions.get(greedy[0].session_id) is None and third.client == "10.0.0.1" and len(sessions) == 3

    asyncio.run(scenario())
