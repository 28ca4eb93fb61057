"""The demo's branch of moa-chat's one exception tree (:mod:`drafts.errors`).

MoaError (drafts.errors)
└── DemoError      the demo's verifier (or its link shaper) could not be started
"""

from __future__ import annotations

from drafts.errors import MoaError


class DemoError(MoaError):
    """The demo's verifier or link shaper could not be started; the message says why and what to do."""
