"""Slow and silent clients against the dashboard's web server, over real sockets: each is cut off, others served.

The dashboard runs in this process with short limits; the attacks are those of ``tests/support/slow_clients.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

pytest.importorskip("aiohttp")

from dtscale_emulator.dashboard import start
from dtscale_emulator.dashboard.connect import endpoint_clients
from tests.support.slow_clients import CEILING, attacker, closed_by_server, connect, status_and_json_body, trickling

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

LIMIT = 0.5  # seconds: the idle and body timeouts of the dashboard under attack


@pytest.fixture
async def dashboard() -> AsyncIterator[str]:
    # The hub's endpoint is never called: the attacks use the page and a request refused before it reaches a hub.
    served = await start(
        endpoint_clients("127.0.0.1:9", None), ["default"], port=0, idle_timeout=LIMIT, body_timeout=LIMIT
    )
    try:
        yield served.url.rstrip("/")
    finally:
        await served.close()


async def _served(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=CEILING) as client:
        response = await client.get("/")
    assert response.status_code == 200, response.text


async def test_half_a_request_head_is_closed_and_others_are_served(dashboard: str) -> None:
    async with attacker(dashboard) as (reader, writer):
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        await writer.drain()
        await _served(dashboard)
        assert await closed_by_server(reader) == b""


async def test_a_head_trickled_byte_by_byte_is_closed(dashboard: str) -> None:
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    async with attacker(dashboard) as (reader, writer), trickling(writer, head, every=LIMIT / 10):
        await _served(dashboard)
        assert await closed_by_server(reader) == b""


async def test_half_a_body_gets_408_and_the_connection_is_closed(dashboard: str) -> None:
    host = dashboard.removeprefix("http://")
    part = b'{"name": "x", '
    head = (
        f"POST /api/hubs/default/orchestrations HTTP/1.1\r\nHost: {host}\r\nOrigin: {dashboard}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(part) * 4}\r\n\r\n"
    )
    async with attacker(dashboard) as (reader, writer):
        writer.write(head.encode() + part)
        await writer.drain()
        await _served(dashboard)
        answer = await closed_by_server(reader)
    status, body = status_and_json_body(answer)
    assert status.startswith(b"HTTP/1.1 408"), answer
    assert "did not arrive whole within 0.5 seconds" in json.loads(body)["error"], body


async def test_many_silent_connections_are_closed(dashboard: str) -> None:
    attackers = [await connect(dashboard) for _ in range(50)]
    try:
        await _served(dashboard)
        for reader, _ in attackers:
            assert await closed_by_server(reader) == b""
    finally:
        for _, writer in attackers:
            writer.close()
