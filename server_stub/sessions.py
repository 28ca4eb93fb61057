"""The server's sessions: who owns each, how long a dropped one waits to be resumed, its sampling generator.

Lives on the event loop (no locks); the target state itself lives in the backend. A session is
*attached* to one connection, or *detached* for ``grace`` seconds after its connection dropped
(or idled out), during which a Hello with ``resume_session`` takes it back. After the grace
period it expires and ``on_expire`` closes it in the backend; a later resume is answered with
SESSION_UNKNOWN and a fresh session, and the client replays its tokens.

A resume while the old connection still looks alive (the server has not noticed the drop yet)
takes the session over: the old connection is told it was superseded and closes.

Each session belongs to a *client* (its connection's peer address). One client may hold at most
``per_client`` sessions, so it cannot take the whole server: when it is at its limit, its own
oldest detached session makes room, else it gets BUSY naming ``--max-sessions-per-client``.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from drafts.protocol import Needs
from drafts.sampling import SamplingConfig
from server_stub.errors import ServerBusyError
from server_stub.kept import KeptRows


class Owner(Protocol):
    """The connection a session is attached to."""

    def supersede(self) -> None:
        """Another connection resumed this one's session: close, and leave the session alone."""


@dataclass
class SessionRecord:
    session_id: str
    needs: Needs
    owner: Owner | None  # None while detached
    generator: torch.Generator = field(default_factory=torch.Generator)  # the session's T > 0 randomness
    seed: int | None = None  # the seed the generator was last set from
    expiry: asyncio.TimerHandle | None = None  # while detached
    client: str = ""  # the peer address of the connection that opened or last resumed it
    kept: KeptRows | None = None  # the rows of its last Prefill(later=True) not fetched yet


class SessionRegistry:
    """Sessions by id; see the module docstring."""

    def __init__(
        self, max_sessions: int, grace: float, on_expire: Callable[[str], None], per_client: int | None = None
    ) -> None:
        self.max_sessions = max_sessions
        self.per_client = per_client or max_sessions
        self.grace = grace
        self.on_expire = on_expire
        self._records: dict[str, SessionRecord] = {}  # in creation order
        self._counter = itertools.count(1)

    def __len__(self) -> int:
        return len(self._records)

    def get(self, session_id: str) -> SessionRecord | None:
        return self._records.get(session_id)

    def new(self, needs: Needs, owner: Owner, client: str = "") -> SessionRecord:
        """A fresh session attached to ``owner``; at a limit, the oldest detached session within it makes room."""
        mine = [r for r in self._records.values() if r.client == client]
        if len(mine) >= self.per_client:
            self._make_room(
                mine,
                f"this client ({client or 'unknown'}) holds {len(mine)} sessions, the server's "
                "--max-sessions-per-client limit; close one (Bye) or retry later",
            )
        if len(self._records) >= self.max_sessions:
            self._make_room(
                list(self._records.values()),
                f"the server holds {self.max_sessions} sessions, its --max-sessions limit; "
                "retry later, or ask the operator to raise the limit",
            )
        session_id = f"s{next(self._counter)}-{secrets.token_urlsafe(12)}"  # unguessable: the id resumes a session
        record = SessionRecord(session_id, needs, owner, client=client)
        record.generator.seed()
        self._records[session_id] = record
        return record

    def _make_room(self, records: list[SessionRecord], refusal: str) -> None:
        detached = next((r for r in records if r.owner is None), None)
        if detached is None:
            raise ServerBusyError(refusal)
        self.expire(detached.session_id)

    def resume(self, session_id: str, needs: Needs, owner: Owner) -> SessionRecord | None:
        """Attach the session to ``owner``, or None if it is gone or was opened for other needs."""
        record = self._records.get(session_id)
        if record is None or record.needs != needs:
            return None
        if record.expiry is not None:
            record.expiry.cancel()
            record.expiry = None
        previous, record.owner = record.owner, owner
        if previous is not None and previous is not owner:
            previous.supersede()
        return record

    def detach(self, record: SessionRecord) -> None:
        """The owner is gone: keep the session for ``grace`` seconds."""
        if self._records.get(record.session_id) is not record or record.owner is None:
            return
        record.owner = None
        record.expiry = asyncio.get_running_loop().call_later(self.grace, self.expire, record.session_id)

    def expire(self, session_id: str) -> None:
        """Forget a session now and close it in the backend."""
        if self.remove(session_id) is not None:
            self.on_expire(session_id)

    def remove(self, session_id: str) -> SessionRecord | None:
        record = self._records.pop(session_id, None)
        if record is not None and record.expiry is not None:
            record.expiry.cancel()
        return record

    def clear(self) -> None:
        for session_id in list(self._records):
            self.remove(session_id)

    @staticmethod
    def generator(record: SessionRecord, sampling: SamplingConfig) -> torch.Generator:
        """The session's generator, reseeded whenever a request names a new seed."""
        if sampling.seed is not None and sampling.seed != record.seed:
            record.generator.manual_seed(sampling.seed)
            record.seed = sampling.seed
        return record.generator
