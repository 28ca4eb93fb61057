"""The shaper as a real proxy: a client on 127.0.0.1 talks through it to a real echo server.

Timing assertions are lower bounds only: a shared machine can make things slower, never faster.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from drafts.net.link import PRESETS, Jitter, LinkProfile
from drafts.net.shaper import LinkShaper
from tests.drafts.net.echo import start_echo_server

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def echo_through(profile: LinkProfile) -> AsyncIterator[LinkShaper]:
    server, port = await start_echo_server()
    shaper = await LinkShaper.start(upstream_port=port, profile=profile, seed=0)
    try:
        yield shaper
    finally:
        await shaper.close()
        server.close()


async def connect(shaper: LinkShaper) -> Streams:
    return await asyncio.open_connection("127.0.0.1", shaper.port)


async def send_and_read_back(streams: Streams, payload: bytes) -> bytes:
    reader, writer = streams
    writer.write(payload)
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(len(payload)), timeout=10)


async def round_trip_s(streams: Streams) -> float:
    start = time.perf_counter()
    await send_and_read_back(streams, b"ping")
    return time.perf_counter() - start


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=12))


def test_a_few_hundred_kilobytes_arrive_intact_and_in_order() -> None:
    payload = random.Random(0).randbytes(300_000)

    async def scenario() -> None:
        async with echo_through(PRESETS["lan"]) as shaper:
            streams = await connect(shaper)

            assert await send_and_read_back(streams, payload) == payload
            streams[1].close()

    run(scenario)


def test_bytes_arrive_intact_through_jitter_loss_and_a_bandwidth_limit() -> None:
    rough = LinkProfile("rough", latency_ms=5, jitter_ms=5, jitter=Jitter.NORMAL, bandwidth_bps=20e6, loss=0.05)
    payload = random.Random(1).randbytes(60_000)

    async def scenario() -> None:
        async with echo_through(rough) as shaper:
            streams = await connect(shaper)

            assert await send_and_read_back(streams, payload) == payload
            streams[1].close()

    run(scenario)


def test_jitter_never_reorders_bytes() -> None:
    jittery = LinkProfile("jittery", latency_ms=10, jitter_ms=10, jitter=Jitter.UNIFORM)
    messages = [f"{i:04d}".encode() for i in range(150)]

    async def scenario() -> None:
        async with echo_through(jittery) as shaper:
            reader, writer = await connect(shaper)
            for message in messages:  # written apart, so each is its own chunk with its own delay
                writer.write(message)
                await writer.drain()
                await asyncio.sleep(0.001)

            echoed = await asyncio.wait_for(reader.readexactly(4 * len(messages)), timeout=10)

            assert echoed == b"".join(messages)
            writer.close()

    run(scenario)


@pytest.mark.parametrize("name", ["lan", "wifi"])
def test_a_ping_pong_takes_at_least_the_profile_round_trip(name: str) -> None:
    profile = PRESETS[name]

    async def scenario() -> None:
        async with echo_through(profile) as shaper:
            streams = await connect(shaper)
            await round_trip_s(streams)  # the first exchange also pays the TCP handshake

            fastest = min([await round_trip_s(streams) for _ in range(5)])

            assert fastest >= 0.9 * profile.rtt_ms / 1000
            streams[1].close()

    run(scenario)


def test_the_first_exchange_also_pays_the_handshake_round_trip() -> None:
    async def scenario() -> None:
        async with echo_through(PRESETS["wifi"]) as shaper:
            streams = await connect(shaper)

            assert await round_trip_s(streams) >= 0.9 * 2 * PRESETS["wifi"].rtt_ms / 1000
            streams[1].close()

    run(scenario)


def test_200_kb_at_1_mbit_per_s_takes_at_least_1_4_s() -> None:
    one_mbit = LinkProfile("1mbit", bandwidth_bps=1e6)
    payload = random.Random(2).randbytes(200_000)  # 1.6 Mbit: 1.6 s each way, pipelined

    async def scenario() -> None:
        async with echo_through(one_mbit) as shaper:
            streams = await connect(shaper)
            start = time.perf_counter()

            assert await send_and_read_back(streams, payload) == payload
            assert time.perf_counter() - start >= 1.4
            streams[1].close()

    run(scenario)


async def read_until_cut(reader: asyncio.StreamReader) -> bytes:
    """Read until the connection ends; an RST reads as end of stream here."""
    try:
        return await reader.read(1)
    except ConnectionResetError:
        return b""


def test_offline_cuts_open_connections_refuses_new_ones_and_lan_works_again() -> None:
    async def scenario() -> None:
        async with echo_through(PRESETS["lan"]) as shaper:
            reader, writer = await connect(shaper)
            assert await send_and_read_back((reader, writer), b"hello") == b"hello"

            await shaper.set_profile(PRESETS["offline"])

            assert await asyncio.wait_for(read_until_cut(reader), timeout=1.0) == b""
            with pytest.raises(ConnectionRefusedError):
                await connect(shaper)
            assert shaper.stats().cut_connections == 1

            await shaper.set_profile(PRESETS["lan"])

            streams = await connect(shaper)
            assert await send_and_read_back(streams, b"again") == b"again"
            streams[1].close()
            writer.close()

    run(scenario)


def test_a_shaper_started_offline_refuses_until_switched_online() -> None:
    async def scenario() -> None:
        async with echo_through(PRESETS["offline"]) as shaper:
            with pytest.raises(ConnectionRefusedError):
                await connect(shaper)

            await shaper.set_profile(PRESETS["wifi"])

            streams = await connect(shaper)
            assert await send_and_read_back(streams, b"up") == b"up"
            streams[1].close()

    run(scenario)


def test_a_switch_applies_to_an_open_connection() -> None:
    async def scenario() -> None:
        async with echo_through(PRESETS["lan"]) as shaper:
            streams = await connect(shaper)
            await round_trip_s(streams)

            await shaper.set_profile(LinkProfile("slow", latency_ms=25))

            assert await round_trip_s(streams) >= 0.9 * 0.050
            streams[1].close()

    run(scenario)


def test_stats_count_the_bytes_each_way_and_the_connections() -> None:
    async def scenario() -> None:
        async with echo_through(PRESETS["lan"]) as shaper:
            for size in (1000, 2500):
                reader, writer = await connect(shaper)
                await send_and_read_back((reader, writer), b"x" * size)
                writer.write_eof()  # a clean close, passed on through the shaper both ways
                assert await asyncio.wait_for(reader.read(), timeout=5) == b""
                writer.close()

            stats = shaper.stats()

            assert (stats.bytes_up, stats.bytes_down) == (3500, 3500)
            assert (stats.connections, stats.cut_connections) == (2, 0)

    run(scenario)


def test_a_client_is_reset_when_the_upstream_server_is_down() -> None:
    with socket.socket() as placeholder:  # a port nobody listens on
        placeholder.bind(("127.0.0.1", 0))
        dead_port = placeholder.getsockname()[1]

    async def scenario() -> None:
        shaper = await LinkShaper.start(upstream_port=dead_port)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.port)
            assert await asyncio.wait_for(read_until_cut(reader), timeout=2.0) == b""
            writer.close()
        finally:
            await shaper.close()

    run(scenario)
