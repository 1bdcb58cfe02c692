"""The application's middleware, in process: the bearer token, CORS (closed by default), the body limit, and every
failure as ``{"detail": ...}`` (malformed JSON a 422, never a bare 500)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server import app as app_module
from durabletask.extensions.langgraph._server.config import ServerSettings, load_config
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError, json_body
from tests.langgraph_server.support_surface import write_project

TOKEN = "s3cret-token"
ORIGIN = "https://app.example"
LIMIT = 4096


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(await json_body(request))


async def _raw_json(request: web.Request) -> web.Response:
    return web.json_response(await request.json())


async def _conflict(request: web.Request) -> web.Response:
    raise HttpError(409, "thread 't' is busy")


async def _bug(request: web.Request) -> web.Response:
    raise RuntimeError("a secret the caller must not see")


async def _events(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Content-Location": "/runs/r1"})
    await response.prepare(request)
    await response.write(b"event: end\ndata: null\n\n")
    return response


async def _events_then_bug(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b"event: values\ndata: 1\n\n")
    raise RuntimeError("the stream failed")


def _routes() -> list[web.RouteDef]:
    return [
        web.post("/echo", _echo),
        web.post("/raw", _raw_json),
        web.post("/conflict", _conflict),
        web.get("/bug", _bug),
        web.get("/events", _events),
        web.get("/events-then-bug", _events_then_bug),
    ]


async def _client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, token: str | None, cors: bool
) -> AsyncIterator[TestClient[Any, Any]]:
    monkeypatch.setattr(app_module, "ROUTE_MODULES", ("system",))
    config: dict[str, Any] = {"graphs": {"echo": "./graphs.py:graph"}}
    if cors:
        config["http"] = {"cors": {"allow_origins": [ORIGIN], "allow_headers": ["content-type", "authorization"]}}
    project = load_config(write_project(tmp_path, config))
    hub = AsyncTaskHubGrpcClient(host_address="127.0.0.1:9")  # nothing listens: /ok?check_db=1 must say so
    settings = ServerSettings(project=project, auth_token=token, max_body_bytes=LIMIT, task_hub="hub-x")
    app = app_module.create_app(ServerContext(client=hub, graphs=project.graphs, settings=settings))
    app.router.add_routes(_routes())
    client: TestClient[Any, Any] = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await hub.close()


@pytest.fixture
async def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TestClient[Any, Any]]:
    async for client in _client(tmp_path, monkeypatch, token=TOKEN, cors=True):
        yield client


@pytest.fixture
async def open_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TestClient[Any, Any]]:
    async for client in _client(tmp_path, monkeypatch, token=None, cors=False):
        yield client


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_ok_and_info(open_server: TestClient[Any, Any]) -> None:
    response = await open_server.get("/ok")
    assert (response.status, await response.json()) == (200, {"ok": True})
    info = await (await open_server.get("/info")).json()
    assert info["version"] and info["langgraph_py_version"].startswith("1.2")
    assert info["flags"]["langsmith"] is False and info["flags"]["assistants"] is False
    assert (info["task_hub"], info["graphs"]) == ("hub-x", ["echo"])


async def test_ok_with_check_db_reports_an_unreachable_hub(open_server: TestClient[Any, Any]) -> None:
    response = await open_server.get("/ok", params={"check_db": "1"})
    assert response.status == 503
    assert "the task hub does not answer" in (await response.json())["detail"]


@pytest.mark.adversarial
async def test_every_endpoint_needs_the_token(guarded: TestClient[Any, Any]) -> None:
    for method, path in (("GET", "/ok"), ("GET", "/info"), ("POST", "/echo"), ("GET", "/nowhere")):
        missing = await guarded.request(method, path)
        assert missing.status == 401, path
        assert (await missing.json())["detail"] == "missing bearer token"
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        for headers in (
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": f"Bearer {TOKEN}x"},
            {"X-Api-Key": TOKEN[:-1]},
        ):
            refused = await guarded.request(method, path, headers=headers)
            assert (refused.status, (await refused.json())["detail"]) == (401, "invalid bearer token"), headers
    assert (await guarded.get("/ok", headers=AUTH)).status == 200
    assert (await guarded.get("/ok", headers={"X-Api-Key": TOKEN})).status == 200  # get_client(api_key=...)
    assert (await guarded.get("/ok", headers={"Authorization": f"bearer {TOKEN}"})).status == 200


@pytest.mark.adversarial
async def test_cors_is_closed_by_default(open_server: TestClient[Any, Any]) -> None:
    preflight = await open_server.options("/echo", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"})
    assert preflight.status == 403
    assert "Access-Control-Allow-Origin" not in preflight.headers
    plain = await open_server.get("/ok", headers={"Origin": ORIGIN})
    assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers


@pytest.mark.adversarial
async def test_cors_follows_http_cors(guarded: TestClient[Any, Any]) -> None:
    asked = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    preflight = await guarded.options("/echo", headers=asked)  # no token: browsers send none with a preflight
    assert preflight.status == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert preflight.headers["Access-Control-Allow-Headers"] == "content-type"
    refused = await guarded.options("/echo", headers={**asked, "Origin": "https://evil.example"})
    assert refused.status == 403 and "Access-Control-Allow-Origin" not in refused.headers
    odd_header = await guarded.options("/echo", headers={**asked, "Access-Control-Request-Headers": "x-evil"})
    assert odd_header.status == 403 and "x-evil" in (await odd_header.json())["detail"]
    # an answer, streamed or not, carries the headers a browser needs to read it (the run's location)
    for path in ("/ok", "/events"):
        answer = await guarded.get(path, headers={**AUTH, "Origin": ORIGIN})
        assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN, path
        assert "content-location" in answer.headers["Access-Control-Expose-Headers"], path
        await answer.read()
    other = await guarded.get("/ok", headers={**AUTH, "Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers


@pytest.mark.adversarial
async def test_bodies_are_bounded(open_server: TestClient[Any, Any]) -> None:
    big = json.dumps({"x": "a" * (LIMIT + 10)}).encode()
    declared = await open_server.post("/echo", data=big, headers={"Content-Type": "application/json"})
    assert declared.status == 413
    assert f"limit of {LIMIT} bytes" in (await declared.json())["detail"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: cut while it is read
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    streamed = await open_server.post("/echo", data=chunks())
    assert streamed.status == 413
    assert f"{LIMIT} bytes" in (await streamed.json())["detail"]
    small = await open_server.post("/echo", json={"x": 1})
    assert (small.status, await small.json()) == (200, {"x": 1})


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{bad", "not valid JSON"),
        (b"", "the request body is empty"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON"),
    ],
)
async def test_malformed_bodies_are_422_naming_the_problem(
    open_server: TestClient[Any, Any], body: bytes, message: str
) -> None:
    if len(body) > LIMIT:
        body = b"[" * (LIMIT // 2 - 1) + b"]" * (LIMIT // 2 - 1)
    for path in ("/echo", "/raw"):
        response = await open_server.post(path, data=body, headers={"Content-Type": "application/json"})
        if path == "/raw" and body in (b"", b"[1, 2]"):
            continue  # a handler reading JSON itself decides what it accepts
        assert response.status == 422, (path, body[:20])
        assert message in (await response.json())["detail"] or path == "/raw"


async def test_errors_are_json_and_never_leak(open_server: TestClient[Any, Any]) -> None:
    conflict = await open_server.post("/conflict")
    assert (conflict.status, await conflict.json()) == (409, {"detail": "thread 't' is busy"})
    missing = await open_server.get("/nowhere")
    assert (missing.status, await missing.json()) == (404, {"detail": "Not Found"})
    wrong_method = await open_server.delete("/ok")
    assert wrong_method.status == 405 and "detail" in await wrong_method.json()
    assert "GET" in wrong_method.headers["Allow"]
    bug = await open_server.get("/bug")
    assert bug.status == 500
    assert await bug.json() == {"detail": "internal error: RuntimeError"}


@pytest.mark.adversarial
async def test_check_db_takes_only_a_flag(open_server: TestClient[Any, Any]) -> None:
    response = await open_server.get("/ok", params={"check_db": "maybe"})
    assert response.status == 422 and "check_db" in (await response.json())["detail"]


async def test_a_stream_that_fails_is_cut_not_followed_by_another_answer(open_server: TestClient[Any, Any]) -> None:
    import aiohttp

    response = await open_server.get("/events-then-bug")
    assert response.status == 200
    first = await response.content.readuntil(b"\n\n")
    assert first == b"event: values\ndata: 1\n\n"
    # the connection ends: no "HTTP/1.1 500" written into the event stream
    with pytest.raises(aiohttp.ClientPayloadError):
        await response.content.read()


@pytest.mark.adversarial
async def test_a_token_that_is_not_utf8_is_refused_not_a_500(guarded: TestClient[Any, Any]) -> None:
    import asyncio

    for header in (b"Authorization: Bearer \xff\xfe", b"X-Api-Key: \xc3\xa9t", b"Authorization: \xff"):
        reader, writer = await asyncio.open_connection(guarded.host, guarded.port)
        writer.write(b"GET /ok HTTP/1.1\r\nHost: x\r\n" + header + b"\r\nConnection: close\r\n\r\n")
        await writer.drain()
        answer = await reader.read()
        writer.close()
        await writer.wait_closed()
        assert answer.startswith(b"HTTP/1.1 401 "), (header, answer[:80])
        assert b'"detail": "invalid bearer token"' in answer
