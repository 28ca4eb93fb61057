"""What every connection of a server shares: its config, worker, sessions, limits and admission counters."""

from __future__ import annotations

from dataclasses import dataclass

from drafts.protocol import Capabilities, Limits
from server_stub.admission import ConnectionSlots, QueuedBytes
from server_stub.backend.base import BackendCapabilities
from server_stub.config import ServerConfig
from server_stub.logs import Throttle
from server_stub.sessions import SessionRegistry
from server_stub.worker import InferenceWorker


@dataclass(frozen=True)
class Services:
    """What every connection of a server shares."""

    config: ServerConfig
    worker: InferenceWorker
    registry: SessionRegistry
    backend_caps: BackendCapabilities  # what the backend offers
    limits: Limits
    capabilities: Capabilities  # what Welcome announces
    slots: ConnectionSlots  # connections per client and in all
    queued: QueuedBytes  # request bytes waiting, per connection and in all
    rejections: Throttle  # the log lines of refused frames and handshakes
