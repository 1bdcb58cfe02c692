"""A hostile client's bodies against ``durabletask langgraph dev``: over the limit, malformed, of the wrong types, and
JSON that no thread can keep. Every one gets a 4xx whose JSON names the problem: never a 500, never a hang.

The same project and ``dev`` process as test_attack_http.py (one per module); the routes are listed from the
application itself, so a route added later is attacked too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

import aiohttp
import httpx

from tests.langgraph_server.support_surface import Served
from tests.langgraph_server.test_attack_http import AUTH, LIMIT, a_thread, app_routes, dev, fill

__all__ = ["dev"]
pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]


@pytest.fixture
async def http(dev: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=dev.url, headers=AUTH, timeout=60) as client:
        yield client


async def test_oversized_bodies_get_413_naming_the_limit(http: httpx.AsyncClient) -> None:
    tid = await a_thread(http)
    big = json.dumps({"metadata": {"pad": "a" * LIMIT}, "assistant_id": "echo"}).encode()

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: the body is cut as it is read
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    paths = [
        ("POST", "/threads"),
        ("PATCH", f"/threads/{tid}"),
        ("POST", f"/threads/{tid}/runs/stream"),
        ("POST", "/runs/wait"),
        ("PUT", "/store/items"),
        ("POST", f"/threads/{tid}/commands"),
        ("POST", f"/threads/{tid}/stream/events"),
        ("POST", "/assistants"),
        ("POST", "/runs/crons"),
    ]
    for method, path in paths:
        for content in (big, chunked()):
            response = await http.request(method, path, content=content, headers={"Content-Type": "application/json"})
            assert response.status_code == 413, (method, path, response.text)
            assert f"{LIMIT} bytes" in response.json()["detail"], response.text
    assert (await http.get(f"/threads/{tid}")).json()["metadata"] == {}  # nothing of it was applied


async def test_a_websocket_frame_over_the_limit_closes_the_socket_not_the_server(dev: Served) -> None:
    async with httpx.AsyncClient(base_url=dev.url, headers=AUTH, timeout=60) as http:
        tid = await a_thread(http)
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{dev.url}/threads/{tid}/stream/events", headers=AUTH) as ws:
            await ws.send_str(json.dumps({"id": 1, "method": "state.get", "params": {"pad": "a" * (LIMIT + 1)}}))
            closing = await ws.receive(timeout=60)
            assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), closing
            assert ws.close_code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG, ws.close_code
        async with session.ws_connect(f"{dev.url}/threads/{tid}/stream/events", headers=AUTH) as ws:
            await ws.send_str(json.dumps({"id": 2, "method": "state.get", "params": {}}))
            assert (await ws.receive_json(timeout=60))["id"] == 2


#: Bodies that are not a JSON object a server could read, each with why.
MALFORMED: dict[str, bytes] = {
    "not JSON": b"{bad",
    "a list": b"[1]",
    "a string": b'"s"',
    "not UTF-8": b"\xff\xfe{}",
    "NUL bytes": b"{\x00}",
    "nested past any parser": b"[" * 30000 + b"]" * 30000,
    "objects nested past any parser": b'{"a":' * 20000 + b"1" + b"}" * 20000,
    "a truncated escape": b'{"thread_id": "\\u12',
    "a BOM": b'\xef\xbb\xbf{"x": 1}',
}


@pytest.mark.parametrize("why", sorted(MALFORMED))
async def test_malformed_bodies_are_4xx_on_every_route(http: httpx.AsyncClient, tmp_path: Path, why: str) -> None:
    tid = await a_thread(http)
    for method, template in await app_routes(tmp_path, cors=True):
        if method in ("GET", "HEAD"):
            continue
        path = fill(template).replace("t-attack", tid)
        response = await http.request(
            method, path, content=MALFORMED[why], headers={"Content-Type": "application/json"}
        )
        reads_a_body = method != "DELETE" or path == "/store/items"
        assert response.status_code < 500, (method, path, why, response.text)
        if reads_a_body:
            assert 400 <= response.status_code < 500, (method, path, why, response.text)
        if response.status_code >= 400:
            assert response.json()["detail"], (method, path, why)


#: In the bodies below, @N is a number of more digits than Python reads into an int by default, @DEEP a list
#: nested 800 deep (JSON reads it; nothing that stores a thread's state can).
FILLS = {"@N": "9" * 5000, "@DEEP": "[" * 800 + "]" * 800}
#: Bodies that are JSON but hold what nothing can keep (or a schedule that never fires): each route must refuse
#: them naming the problem.
UNKEEPABLE: list[tuple[str, str, str]] = [
    ("POST", "/threads", '{"metadata": {"x": @N}}'),
    ("PATCH", "/threads/{tid}", '{"metadata": {"x": @N}}'),
    ("POST", "/threads/search", '{"metadata": {"x": @N}}'),
    ("POST", "/runs/wait", '{"assistant_id": "echo", "input": {"text": @N}}'),
    ("POST", "/threads/{tid}/commands", '{"id": 1, "method": "state.get", "params": {"x": @N}}'),
    ("POST", "/threads/{tid}/stream/events", '{"channels": ["values"], "x": @N}'),
    ("POST", "/threads", '{"metadata": {"\\ud800": 1}}'),
    ("POST", "/threads/{tid}/runs/wait", '{"assistant_id": "echo", "input": {"text": "\\ud800"}}'),
    ("POST", "/threads/{tid}/state", '{"values": {"text": "\\udfff"}}'),
    ("POST", "/threads/{tid}/state", '{"values": {"text": @DEEP}}'),
    ("POST", "/threads", '{"metadata": {"m": @DEEP}}'),
    ("PUT", "/store/items", '{"namespace": ["a"], "key": "k", "value": {"x": @N}}'),
    ("POST", "/store/items/search", '{"namespace_prefix": ["a"], "filter": {"x": @N}}'),
    ("POST", "/assistants/search", '{"metadata": {"x": @N}}'),
    ("POST", "/assistants", '{"graph_id": "echo", "metadata": {"x": @N}}'),
    ("POST", "/runs/crons", '{"assistant_id": "echo", "schedule": "* * * * *", "input": {"x": @N}}'),
    ("DELETE", "/store/items", '{"namespace": ["\\ud800"], "key": "k"}'),
    ("PUT", "/store/items", '{"namespace": ["a"], "key": "\\ud800", "value": {}}'),
    ("POST", "/assistants", '{"graph_id": "echo", "name": "\\ud800"}'),
    ("POST", "/runs/crons", '{"assistant_id": "echo", "schedule": "0 0 31 2 *"}'),  # 31 February: never fires
]


@pytest.mark.parametrize(("method", "path", "body"), UNKEEPABLE, ids=[f"{m} {p} {b[:24]}" for m, p, b in UNKEEPABLE])
async def test_json_that_no_thread_can_keep_is_422(http: httpx.AsyncClient, method: str, path: str, body: str) -> None:
    tid = await a_thread(http)
    if path.endswith("/state"):  # a state update needs a thread that ran
        ran = await http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "echo", "input": {"text": "x"}})
        assert ran.status_code == 200, ran.text
    for mark, text in FILLS.items():
        body = body.replace(mark, text)
    response = await http.request(
        method, path.format(tid=tid), content=body.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, (method, path, response.text[:300])
    assert response.json()["detail"] and len(response.text) < 1000, response.text[:300]
    if path.endswith("/state"):
        state = await http.get(f"/threads/{tid}/state")
        assert state.json()["values"] == {"text": "x!"}, state.text  # nothing of it was kept


async def test_the_body_limit_is_exact(http: httpx.AsyncClient) -> None:
    def body(size: int) -> bytes:
        shell = b'{"metadata": {"pad": ""}}'
        return shell.replace(b'""', b'"' + b"a" * (size - len(shell)) + b'"')

    at_limit = await http.post("/threads", content=body(LIMIT), headers={"Content-Type": "application/json"})
    assert at_limit.status_code == 200 and len(at_limit.json()["metadata"]["pad"]) > LIMIT - 100, at_limit.text[:200]
    over = await http.post("/threads", content=body(LIMIT + 1), headers={"Content-Type": "application/json"})
    assert over.status_code == 413 and str(LIMIT) in over.json()["detail"], over.text


#: Fields the SDK sends in bodies, each given values of every wrong JSON type in turn.
BODY_FIELDS = [
    "thread_id",
    "assistant_id",
    "graph_id",
    "metadata",
    "config",
    "context",
    "input",
    "command",
    "limit",
    "offset",
    "namespace",
    "key",
    "value",
    "ids",
    "status",
    "values",
    "checkpoint",
    "checkpoint_id",
    "as_node",
    "stream_mode",
    "sort_by",
    "select",
    "name",
    "if_exists",
    "schedule",
    "thread_ids",
    "run_ids",
    "filter",
    "namespace_prefix",
    "ttl",
    "id",
    "method",
    "params",
    "since",
    "interrupt_before",
    "multitask_strategy",
    "on_disconnect",
]
WRONG_VALUES: list[Any] = [[], {"a": {}}, -1, 1e308, "\u0000"]


async def test_wrong_types_in_bodies_are_4xx_on_every_route(http: httpx.AsyncClient, tmp_path: Path) -> None:
    tid = await a_thread(http)
    for method, template in await app_routes(tmp_path, cors=True):
        if method in ("GET", "HEAD") or (method == "DELETE" and template != "/store/items"):
            continue
        path = fill(template).replace("t-attack", tid)
        # Each field of each route gets one wrong value, rotating, so every value meets every route and field kind.
        for shift, field in enumerate(BODY_FIELDS):
            value = WRONG_VALUES[(shift + len(path)) % len(WRONG_VALUES)]
            body = {field: value} if field == "assistant_id" else {"assistant_id": "echo", field: value}
            answer = await http.request(method, path, json=body)
            assert answer.status_code < 500, (method, path, body, answer.text[:200])
            if answer.status_code >= 400:
                assert answer.json()["detail"], (method, path, body)
