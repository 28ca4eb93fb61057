"""Simulated network links for moa-chat: profiles (:mod:`.link`) and a loopback TCP shaper (:mod:`.shaper`),
also runnable on its own thread from synchronous code (:mod:`.shaper_thread`).

Pure asyncio and the standard library, so the client, the server and the benchmark can all use it.
"""

from drafts.net.link import PRESETS, Jitter, LinkProfile, TokenBucket, preset
from drafts.net.shaper import LinkShaper, LinkStats
from drafts.net.shaper_thread import ShaperThread

__all__ = ["PRESETS", "Jitter", "LinkProfile", "LinkShaper", "LinkStats", "ShaperThread", "TokenBucket", "preset"]
