"""Ending a program whose work is done without the interpreter's teardown (``moa-chat``, ``moa-server``).

With torch, transformers and a target loaded, the interpreter's own teardown (module cleanup and
a full garbage collection over millions of objects) takes seconds: ~4 s for ``moa-chat`` and
10.7 s for ``moa-server`` on a loaded core, which a user quitting waits for and ``moa-chat --demo``
answered with a SIGKILL of its verifier. A program calls :func:`leave` once everything of its
own is closed; calls from tests return normally instead (their ``main`` takes an ``argv``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys


def leave(code: int) -> None:
    """Flush the logs and the standard streams, then end the process now with ``code``."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
