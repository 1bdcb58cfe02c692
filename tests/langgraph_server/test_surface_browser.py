"""A server without a token refuses what a browser sends for another site (cross-site POSTs and WebSocket
handshakes, DNS rebinding); a number too long to read is a 422; the token can come from the environment."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

import aiohttp
import httpx
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from durabletask._cli.commands.langgraph import AUTH_TOKEN_ENV
from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server import app as app_module
from durabletask.extensions.langgraph._server.config import ServerSettings, load_config
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import json_body
from durabletask.extensions.langgraph._server.middleware_browser import is_loopback
from tests.langgraph_server.support_surface import run_cli, run_cli_once, write_project

pytestmark = pytest.mark.adversarial

ORIGIN = "https://app.example"
EVIL = "https://evil.example"
TOKEN = "browser-token"


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(await json_body(request))


async def _socket(request: web.Request) -> web.WebSocketResponse:
    socket = web.WebSocketResponse()
    await socket.prepare(request)
    await socket.send_str("hello")
    await socket.close()
    return socket


async def _app_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, host: str | None, token: str | None = None, cors: bool = True
) -> AsyncIterator[TestClient[Any, Any]]:
    monkeypatch.setattr(app_module, "ROUTE_MODULES", ("system",))
    config: dict[str, Any] = {"graphs": {"echo": "./graphs.py:graph"}}
    if cors:
        config["http"] = {"cors": {"allow_origins": [ORIGIN]}}
    project = load_config(write_project(tmp_path, config))
    hub = AsyncTaskHubGrpcClient(host_address="127.0.0.1:9")  # never called by these routes
    settings = ServerSettings(project=project, auth_token=token, host=host)
    app = app_module.create_app(ServerContext(client=hub, graphs=project.graphs, settings=settings))
    app.router.add_routes([web.post("/echo", _echo), web.get("/socket", _socket)])
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await hub.close()


@pytest.fixture
async def loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TestClient[Any, Any]]:
    async for client in _app_client(tmp_path, monkeypatch, host="127.0.0.1"):
        yield client


@pytest.fixture
async def everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TestClient[Any, Any]]:
    async for client in _app_client(tmp_path, monkeypatch, host="0.0.0.0", cors=False):
        yield client


@pytest.fixture
async def with_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TestClient[Any, Any]]:
    async for client in _app_client(tmp_path, monkeypatch, host="127.0.0.1", token=TOKEN):
        yield client


def _own_origin(client: TestClient[Any, Any]) -> str:
    return f"http://{client.host}:{client.port}"


async def _raw(client: TestClient[Any, Any], head: str) -> bytes:
    """A request written by hand (a ``Host`` no client library lets through as it is); the answer's bytes."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(head.encode() + b"Connection: close\r\n\r\n")
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 60)
    finally:
        writer.close()


async def test_a_cross_site_simple_post_is_refused_naming_http_cors(loopback: TestClient[Any, Any]) -> None:
    body = json.dumps({"x": 1})
    refused = (
        EVIL,
        "null",
        "http://127.0.0.1",
        "http://127.0.0.1:x",
        "ws://127.0.0.1",
        "https://app.example.evil.example",
    )
    for origin in (*refused, "not an origin"):
        sent = await loopback.post("/echo", data=body, headers={"Origin": origin, "Content-Type": "text/plain"})
        assert sent.status == 403, origin
        detail = (await sent.json())["detail"]
        assert "http.cors.allow_origins" in detail and "--auth-token" in detail, detail
    for method in ("PUT", "PATCH", "DELETE"):
        other = await loopback.request(method, "/echo", headers={"Origin": EVIL})
        assert other.status == 403, method


async def test_allowed_same_origin_and_origin_less_requests_go_through(loopback: TestClient[Any, Any]) -> None:
    for headers in ({}, {"Origin": ORIGIN}, {"Origin": _own_origin(loopback)}):
        sent = await loopback.post("/echo", json={"x": 1}, headers=headers)
        assert (sent.status, await sent.json()) == (200, {"x": 1}), headers
    # reading is not refused: the browser hides the answer from a page http.cors does not allow
    read = await loopback.get("/ok", headers={"Origin": EVIL})
    assert read.status == 200 and "Access-Control-Allow-Origin" not in read.headers


async def test_a_cross_site_websocket_handshake_is_refused(loopback: TestClient[Any, Any]) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await loopback.ws_connect("/socket", headers={"Origin": EVIL})
    assert refused.value.status == 403
    for headers in ({}, {"Origin": ORIGIN}, {"Origin": _own_origin(loopback)}):
        socket = await loopback.ws_connect("/socket", headers=headers)
        assert (await socket.receive_str(timeout=60)) == "hello", headers
        await socket.close()


async def test_a_loopback_server_answers_only_loopback_host_names(loopback: TestClient[Any, Any]) -> None:
    port = loopback.port
    for host in (f"evil.example:{port}", "evil.example", f"192.0.2.1:{port}", f"localhost.evil.example:{port}"):
        answer = await _raw(loopback, f"GET /ok HTTP/1.1\r\nHost: {host}\r\n")
        assert answer.startswith(b"HTTP/1.1 403 "), (host, answer[:200])
        assert b"DNS rebinding" in answer and b"loopback" in answer, answer[-300:]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"127.0.0.2:{port}", "LOCALHOST"):
        answer = await _raw(loopback, f"GET /ok HTTP/1.1\r\nHost: {host}\r\n")
        assert answer.startswith(b"HTTP/1.1 200 "), (host, answer[:200])
    # a rebinding page is same-origin to itself: its Origin matches its Host, and the Host is refused
    rebound = f"http://evil.example:{port}"
    answer = await _raw(
        loopback, f"POST /echo HTTP/1.1\r\nHost: evil.example:{port}\r\nOrigin: {rebound}\r\nContent-Length: 2\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:200]


async def test_a_server_listening_beyond_loopback_checks_origins_not_host_names(
    everywhere: TestClient[Any, Any],
) -> None:
    answer = await _raw(everywhere, f"GET /ok HTTP/1.1\r\nHost: api.example:{everywhere.port}\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    refused = await everywhere.post("/echo", data=b"{}", headers={"Origin": ORIGIN})  # no http.cors at all
    assert refused.status == 403


async def test_with_a_token_the_token_is_the_guard(with_token: TestClient[Any, Any]) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    unauthenticated = await with_token.post("/echo", data=b"{}", headers={"Origin": EVIL})
    assert unauthenticated.status == 401
    answered = await with_token.post("/echo", json={"x": 1}, headers={**auth, "Origin": EVIL})
    assert answered.status == 200 and "Access-Control-Allow-Origin" not in answered.headers
    answer = await _raw(with_token, f"GET /ok HTTP/1.1\r\nHost: proxy.example\r\nAuthorization: Bearer {TOKEN}\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LocalHost.", True),
        ("app.localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.2", False),
        ("localhost.example", False),
        ("", False),
    ],
)
def test_loopback_names(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def test_a_number_too_long_to_read_is_a_422_naming_the_limit(loopback: TestClient[Any, Any]) -> None:
    body = b'{"x": ' + b"9" * 5000 + b"}"
    answer = await loopback.post("/echo", data=body, headers={"Content-Type": "application/json"})
    assert answer.status == 422
    assert "a number too long to read; the limit is 4300 digits" in (await answer.json())["detail"]
    small = await loopback.post("/echo", data=b'{"x": ' + b"9" * 4300 + b"}")
    assert small.status == 200


def test_dev_without_a_token_refuses_a_page_of_another_site(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    with run_cli(["langgraph", "dev", "--config", str(project), "--port", "0", "--no-reload"]) as served:
        cross = httpx.post(
            f"{served.url}/threads", content=b"{}", headers={"Origin": EVIL, "Content-Type": "text/plain"}, timeout=60
        )
        assert cross.status_code == 403 and "http.cors.allow_origins" in cross.json()["detail"], cross.text
        allowed = httpx.post(f"{served.url}/threads", json={}, headers={"Origin": ORIGIN}, timeout=60)
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
        plain = httpx.post(f"{served.url}/threads", json={}, timeout=60)  # what langgraph_sdk sends
        assert plain.status_code == 200, plain.text


def test_the_token_can_come_from_the_environment(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    args = ["langgraph", "dev", "--config", str(project), "--port", "0", "--no-reload"]
    with run_cli(args, env={AUTH_TOKEN_ENV: TOKEN}) as served:
        assert httpx.get(f"{served.url}/ok", timeout=60).status_code == 401
        answer = httpx.get(f"{served.url}/ok", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert answer.status_code == 200, answer.text
        cmdline = Path(f"/proc/{served.process.pid}/cmdline")
        if cmdline.exists():
            assert TOKEN.encode() not in cmdline.read_bytes()
    empty = run_cli_once(["langgraph", "dev", "--config", str(project)], env={AUTH_TOKEN_ENV: " "})
    assert empty.returncode == 2 and f"{AUTH_TOKEN_ENV} must be a non-empty token" in empty.stderr, empty.stderr
