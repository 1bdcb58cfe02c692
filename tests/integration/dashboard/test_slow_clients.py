"""Slow and silent clients against the dashboard's web server, over real sockets: each is cut off, others served.

The dashboard runs in this process with short limits; the attacks are those of ``tests/support/slow_clients.py``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytest.importorskip("aiohttp")

from dtscale_emulator.dashboard import start
from dtscale_emulator.dashboard.connect import endpoint_clients
from tests.support import slow_clients as attack
from tests.support.slow_clients import CEILING

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

LIMIT = 0.5  # seconds: the idle and body timeouts of the dashboard under attack


def _against_a_dashboard(scenario: Callable[[str], Awaitable[None]]) -> Callable[[], None]:
    """A test that runs ``scenario`` against a dashboard with short limits, on an event loop of its own in another
    thread: this package's browser tests keep an event loop marked running on the main thread while their browser
    (package-scoped) is open, so an asyncio test here after them could not start its loop."""

    def test() -> None:
        async def run() -> None:
            # The hub's endpoint is never called: the attacks use the page and requests refused before a hub.
            served = await start(
                endpoint_clients("127.0.0.1:9", None), ["default"], port=0, idle_timeout=LIMIT, body_timeout=LIMIT
            )
            try:
                await scenario(served.url.rstrip("/"))
            finally:
                await served.close()

        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, run()).result()

    return test


async def _served(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=CEILING) as client:
        response = await client.get("/")
    assert response.status_code == 200, response.text


@_against_a_dashboard
async def test_half_a_request_head_is_closed_and_others_are_served(dashboard: str) -> None:
    served = functools.partial(_served, dashboard)
    await attack.half_a_head_is_cut(dashboard, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", served)


@_against_a_dashboard
async def test_a_head_trickled_byte_by_byte_is_closed(dashboard: str) -> None:
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    await attack.trickled_head_is_cut(dashboard, head, LIMIT / 10, functools.partial(_served, dashboard))


@_against_a_dashboard
async def test_half_a_body_gets_408_and_the_connection_is_closed(dashboard: str) -> None:
    host = dashboard.removeprefix("http://")
    head = (
        f"POST /api/hubs/default/orchestrations HTTP/1.1\r\nHost: {host}\r\nOrigin: {dashboard}\r\n"
        "Content-Type: application/json\r\n"
    )
    served = functools.partial(_served, dashboard)
    status, body = await attack.half_a_body_answer(dashboard, head, b'{"name": "x", ', served)
    assert status.startswith(b"HTTP/1.1 408"), (status, body)
    assert "did not arrive whole within 0.5 seconds" in body["error"], body


@_against_a_dashboard
async def test_many_silent_connections_are_closed(dashboard: str) -> None:
    await attack.silent_crowd_is_cut(dashboard, functools.partial(_served, dashboard))


@_against_a_dashboard
async def test_a_large_body_sent_steadily_over_a_slow_link_is_read_whole_past_the_body_timeout(dashboard: str) -> None:
    # 48 KiB at 16 KiB a second: six times the body timeout, far above the rate a body must keep up.
    host = dashboard.removeprefix("http://")
    body = b'{"pad": "' + b"x" * (48 * 1024) + b'"}'
    async with attack.attacker(dashboard) as (reader, writer):
        writer.write(
            f"POST /api/no-such-route HTTP/1.1\r\nHost: {host}\r\nOrigin: {dashboard}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        )
        for start in range(0, len(body), 4096):
            writer.write(body[start : start + 4096])
            await writer.drain()
            await asyncio.sleep(LIMIT / 2)
        answer = await attack.closed_by_server(reader)
    assert answer.startswith(b"HTTP/1.1 405"), answer[:200]  # read whole, then refused: only pages take a GET
