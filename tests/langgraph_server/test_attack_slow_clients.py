"""Slow and silent clients against the LangGraph server, over real sockets: each is cut off, others are served.

The server runs in this process with short limits (``idle_timeout``, ``body_timeout``); each attack waits for
the server to close its connection under a ceiling many times those limits (``tests/support/slow_clients.py``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

import httpx

from durabletask.extensions.langgraph._server.config import ServerSettings, load_config
from durabletask.extensions.langgraph._server.launch import Connection, serve_http
from tests.langgraph_server.support_surface import run_cli, run_cli_once, write_project
from tests.support import slow_clients as attack
from tests.support.slow_clients import CEILING

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

LIMIT = 0.5  # seconds: idle_timeout and body_timeout of the server under attack


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[str]:
    project = load_config(write_project(tmp_path / "project"))
    settings = ServerSettings(project=project, idle_timeout=LIMIT, body_timeout=LIMIT, host="127.0.0.1")
    url: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    serving = asyncio.create_task(
        serve_http(
            project,
            settings,
            Connection(endpoint="127.0.0.1:9"),  # never called: the attacks use routes that need no hub
            host="127.0.0.1",
            port=0,
            ready=url.set_result,
            stop=stop,
        )
    )
    try:
        yield await asyncio.wait_for(asyncio.shield(url), CEILING)
    finally:
        stop.set()
        await asyncio.wait_for(serving, CEILING)


async def _served(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=CEILING) as client:
        response = await client.get("/ok")
    assert response.status_code == 200, response.text


async def test_a_connection_that_sends_nothing_is_closed(server: str) -> None:
    await attack.silent_crowd_is_cut(server, functools.partial(_served, server), count=1)


async def test_half_a_request_head_is_closed_and_others_are_served(server: str) -> None:
    head = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    await attack.half_a_head_is_cut(server, head, functools.partial(_served, server))


async def test_a_head_trickled_byte_by_byte_is_closed(server: str) -> None:
    # Each byte comes well within the limit: only a bound on the whole head stops this.
    head = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    await attack.trickled_head_is_cut(server, head, LIMIT / 10, functools.partial(_served, server))


async def test_an_idle_keep_alive_connection_is_closed(server: str) -> None:
    async with attack.attacker(server) as (reader, writer):
        writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        answer = await attack.closed_by_server(reader)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert b"connection: close" not in answer.lower(), answer  # kept alive, then closed for idling


async def test_half_a_body_gets_408_and_the_connection_is_closed(server: str) -> None:
    head = "POST /assistants/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    served = functools.partial(_served, server)
    status, body = await attack.half_a_body_answer(server, head, b'{"limit": 10, "metadata": ', served)
    assert status.startswith(b"HTTP/1.1 408"), (status, body)
    assert "body timeout of 0.5 seconds" in body["detail"], body


async def test_many_silent_connections_do_not_stall_a_client(server: str) -> None:
    await attack.silent_crowd_is_cut(server, functools.partial(_served, server))


def test_the_commands_take_the_limits_and_refuse_wrong_ones(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    for flag, value in (("--idle-timeout", "0"), ("--body-timeout", "-1"), ("--idle-timeout", "nan")):
        given = run_cli_once(["langgraph", "serve", "--config", str(project), flag, value])
        assert given.returncode == 2, given.stderr
        assert f"{flag} must be more than 0 and at most 86400 seconds" in given.stderr, given.stderr


async def test_serve_closes_half_a_head_at_its_idle_timeout(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    args = ["langgraph", "serve", "--config", str(project), "--port", "0", "--endpoint", "127.0.0.1:9"]
    with run_cli([*args, "--idle-timeout", str(LIMIT)]) as served:
        head = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        await attack.half_a_head_is_cut(served.url, head, functools.partial(_served, served.url))


async def _post_in_chunks(url: str, path: str, body: bytes, chunk: int, every: float) -> bytes:
    """POSTs ``body`` a ``chunk`` of bytes every ``every`` seconds; the status line the server answered."""
    async with attack.attacker(url) as (reader, writer):
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        )
        for start in range(0, len(body), chunk):
            writer.write(body[start : start + chunk])
            await writer.drain()
            await asyncio.sleep(every)
        answer = await attack.closed_by_server(reader)
    return answer.split(b"\r\n", 1)[0]


async def test_a_large_body_sent_steadily_over_a_slow_link_is_read_whole_past_the_body_timeout(server: str) -> None:
    # 48 KiB at 16 KiB a second: six times the body timeout, far above the rate a body must keep up.
    body = b'{"pad": "' + b"x" * (48 * 1024) + b'"}'
    status = await _post_in_chunks(server, "/no-such-route", body, 4096, LIMIT / 2)
    assert status.startswith(b"HTTP/1.1 404"), status


async def test_a_body_trickled_byte_by_byte_gets_408(server: str) -> None:
    head = "POST /assistants/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    async with attack.attacker(server) as (reader, writer):
        writer.write(f"{head}Content-Length: 100000\r\n\r\n".encode())
        async with attack.trickling(writer, b'{"limit": 10, "metadata": "', LIMIT / 10):
            answer = await attack.closed_by_server(reader)
    assert answer.startswith(b"HTTP/1.1 408"), answer
