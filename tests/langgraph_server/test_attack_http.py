"""A hostile client against ``durabletask langgraph dev``: the token, CORS, bounded bodies, bad JSON, thread IDs.

One ``dev`` process serves a small project of this file's own (``--auth-token``, ``http.cors`` allowing one
origin, ``--max-body-bytes 65536``). The routes are listed from the application itself, so a route added later is
attacked too. Every hostile request must get a 4xx whose JSON names the problem: never a 500, never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

import aiohttp
import httpx
from aiohttp.test_utils import TestClient, TestServer

from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server.app import create_app
from durabletask.extensions.langgraph._server.config import ServerSettings, load_config
from durabletask.extensions.langgraph._server.context import ServerContext
from tests.langgraph_server.support_surface import Served, run_cli

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

TOKEN = "attack-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ORIGIN = "https://app.example"
LIMIT = 65536

GRAPHS = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    text: str
    answer: str


def echo(state: State) -> State:
    return {"text": (state.get("text") or "") + "!"}


def ask(state: State) -> State:
    return {"answer": interrupt({"q": state.get("text")})}


def _one(node):
    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile()


echo_graph = _one(echo)
ask_graph = _one(ask)
"""


def write_attack_project(folder: Path, *, cors: bool = True) -> Path:
    """The project the attacks are served: an echo graph and a graph that waits at an interrupt."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attack_graphs.py").write_text(GRAPHS)
    config: dict[str, Any] = {
        "dependencies": ["."],
        "graphs": {"echo": "./attack_graphs.py:echo_graph", "ask": "./attack_graphs.py:ask_graph"},
    }
    if cors:
        config["http"] = {"cors": {"allow_origins": [ORIGIN], "allow_credentials": True}}
    (folder / "langgraph.json").write_text(json.dumps(config))
    return folder / "langgraph.json"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = write_attack_project(tmp_path_factory.mktemp("attack") / "project")
    args = ["langgraph", "dev", "--config", str(config), "--port", "0", "--auth-token", TOKEN]
    with run_cli([*args, "--max-body-bytes", str(LIMIT)]) as served:
        yield served


@pytest.fixture
async def http(dev: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=dev.url, headers=AUTH, timeout=60) as client:
        yield client


async def app_routes(tmp_path: Path, *, cors: bool) -> list[tuple[str, str]]:
    """Every (method, path template) of the real application (all route modules), HEAD included."""
    project = load_config(write_attack_project(tmp_path / "routes", cors=cors))
    hub = AsyncTaskHubGrpcClient(host_address="127.0.0.1:9")  # never called: the routes are only listed
    try:
        app = create_app(ServerContext(client=hub, graphs=project.graphs, settings=ServerSettings(project=project)))
        return [(route.method, route.resource.canonical) for route in app.router.routes() if route.resource]
    finally:
        await hub.close()


def fill(template: str) -> str:
    values = {"thread_id": "t-attack", "run_id": "r-attack", "assistant_id": "echo", "checkpoint_id": "c1"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "x"), template)


async def test_every_route_of_the_app_needs_the_token(dev: Served, tmp_path: Path) -> None:
    routes = await app_routes(tmp_path, cors=True)
    assert len(routes) > 50 and ("GET", "/threads/{thread_id}/stream/events") in routes, routes
    credentials: list[dict[str, str]] = [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}0"},
        {"Authorization": "Bearer"},
        {"Authorization": ""},
        {"X-Api-Key": ""},
        {"X-Api-Key": TOKEN.upper()},
        {"Authorization": "Bearer wrong", "X-Api-Key": TOKEN},  # a wrong bearer is not excused by a key
        {"Origin": ORIGIN},  # an allowed origin is no credential
    ]
    async with httpx.AsyncClient(base_url=dev.url, timeout=60) as client:
        for method, template in routes:
            path = fill(template)
            for headers in credentials:
                response = await client.request(method, path, headers=headers, content=b"{}")
                assert response.status_code == 401, (method, path, headers, response.text)
                assert response.headers["WWW-Authenticate"].startswith("Bearer"), (method, path)
                if method != "HEAD":
                    assert response.headers["Content-Type"].startswith("application/json"), (method, path)
                    assert response.json()["detail"] in ("missing bearer token", "invalid bearer token")


async def test_paths_spelled_oddly_still_need_the_token(dev: Served) -> None:
    odd = [
        "//info",
        "/info/",
        "/INFO",
        "/%69nfo",
        "/threads/../info",
        "/./info",
        "/info?x=1",
        "/threads//runs",
        "/threads/%2e%2e/info",
        "/nowhere",
        "/",
        "/docs",
        "/openapi.json",
    ]
    reader, writer = await asyncio.open_connection(*host_port(dev.url))
    try:
        for path in odd:  # raw, so no client normalizes the path first
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            await writer.drain()
            status, body = await read_response(reader)
            assert status == 401, (path, status, body)
    finally:
        writer.close()
    async with httpx.AsyncClient(base_url=dev.url, timeout=60) as client:
        plain_options = await client.options("/threads")  # not a preflight: no Origin, no requested method
        assert plain_options.status_code == 401, plain_options.text


def host_port(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    assert parsed.hostname is not None and parsed.port is not None
    return parsed.hostname, parsed.port


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
    status = int(head.split(b" ", 2)[1])
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    body = await asyncio.wait_for(reader.readexactly(int(length.group(1))), 60) if length else b""
    return status, body


async def test_the_websocket_needs_the_token(dev: Served) -> None:
    url = dev.url + "/threads/t-attack/stream/events"
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Origin": ORIGIN}, {"X-Api-Key": "nope"}):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url, headers=headers)
            assert refused.value.status == 401, headers
        async with httpx.AsyncClient(base_url=dev.url, headers=AUTH, timeout=60) as http:
            tid = (await http.post("/threads", json={})).json()["thread_id"]
        async with session.ws_connect(f"{dev.url}/threads/{tid}/stream/events", headers=AUTH) as ws:
            await ws.send_str(json.dumps({"id": 1, "method": "state.get", "params": {}}))
            answer = await ws.receive_json(timeout=60)
            assert answer.get("id") == 1, answer


async def test_preflights_open_only_to_the_configured_origin(dev: Served, tmp_path: Path) -> None:
    routes = {template for _, template in await app_routes(tmp_path, cors=True)}
    asked = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, x-api-key"}
    lookalikes = [
        "https://evil.example",
        "https://app.example.evil.example",
        "http://app.example",
        "https://app.example:8443",
        "null",
        "https://APP.example.",
        "https://app.example/",
    ]
    async with httpx.AsyncClient(base_url=dev.url, timeout=60) as client:
        for template in sorted(routes):
            path = fill(template)
            allowed = await client.options(path, headers={**asked, "Origin": ORIGIN})
            assert allowed.status_code == 200, (path, allowed.text)
            assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
            assert allowed.headers["Access-Control-Allow-Credentials"] == "true"
            assert allowed.content == b""  # a preflight carries no data of the server
            for origin in lookalikes:
                refused = await client.options(path, headers={**asked, "Origin": origin})
                assert refused.status_code == 403, (path, origin)
                assert "Access-Control-Allow-Origin" not in refused.headers, (path, origin)
        for origin in lookalikes:  # an actual answer to another origin carries nothing a browser would honour
            answer = await client.get("/info", headers={**AUTH, "Origin": origin})
            assert answer.status_code == 200 and "Access-Control-Allow-Origin" not in answer.headers, origin


async def test_a_streamed_answer_follows_http_cors(http: httpx.AsyncClient) -> None:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    body = {"assistant_id": "echo", "input": {"text": "x"}}
    for origin, allowed in ((ORIGIN, True), ("https://evil.example", False)):
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body, headers={"Origin": origin}) as r:
            assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
            assert (r.headers.get("Access-Control-Allow-Origin") == ORIGIN) is allowed, r.headers
            if allowed:
                assert "content-location" in r.headers["Access-Control-Expose-Headers"].lower()
            await r.aread()


async def test_cors_is_closed_by_default_on_every_route(tmp_path: Path) -> None:
    project = load_config(write_attack_project(tmp_path / "closed", cors=False))
    hub = AsyncTaskHubGrpcClient(host_address="127.0.0.1:9")  # nothing listens: preflights need no hub
    app = create_app(ServerContext(client=hub, graphs=project.graphs, settings=ServerSettings(project=project)))
    client: TestClient[Any, Any] = TestClient(TestServer(app))
    await client.start_server()
    try:
        for method, template in app_routes_of(app):
            path = fill(template)
            asked = {"Origin": ORIGIN, "Access-Control-Request-Method": method}
            preflight = await client.options(path, headers=asked)
            assert preflight.status == 403, (method, path)
            assert "Access-Control-Allow-Origin" not in preflight.headers
            assert "allow_origins" in (await preflight.json())["detail"]
        plain = await client.get("/info", headers={"Origin": ORIGIN})
        assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers
    finally:
        await client.close()
        await hub.close()


def app_routes_of(app: Any) -> list[tuple[str, str]]:
    return [(route.method, route.resource.canonical) for route in app.router.routes() if route.resource]


async def a_thread(http: httpx.AsyncClient) -> str:
    created = await http.post("/threads", json={})
    assert created.status_code == 200, created.text
    return str(created.json()["thread_id"])


#: Thread IDs LangGraph takes (any string): each must name its own thread, through every route that takes one.
THREAD_IDS = [
    "CaseTest",
    "casetest",  # not the same thread as "CaseTest"
    "caf\u00e9",
    "cafe\u0301",  # the same text to a reader, another thread ID
    "a",
    "a ",
    " ",
    "线程-🙂",
    "a/b",
    "..",
    ".",
    "a?b#c%d&e=f",
    "~",
    "lg:echo:x",  # looks like the instance ID of another thread
    "\u202e reversed",
    "tab\tand\nnewline",
    "x" * 1000,
]


def _path(thread_id: str) -> str:
    return "/threads/" + urllib.parse.quote(thread_id, safe="").replace(".", "%2E")


async def test_every_thread_id_langgraph_takes_works_and_stays_its_own(http: httpx.AsyncClient) -> None:
    for thread_id in THREAD_IDS:
        await http.delete(_path(thread_id))  # made by another test of this server, if any
        created = await http.post("/threads", json={"thread_id": thread_id, "metadata": {"id": thread_id}})
        assert created.status_code == 200 and created.json()["thread_id"] == thread_id, created.text
        ran = await http.post(
            _path(thread_id) + "/runs/wait", json={"assistant_id": "echo", "input": {"text": thread_id}}
        )
        assert (ran.status_code, ran.json()) == (200, {"text": thread_id + "!"}), (thread_id, ran.text)
    for thread_id in THREAD_IDS:
        got = await http.get(_path(thread_id))
        assert got.json()["thread_id"] == thread_id and got.json()["metadata"]["id"] == thread_id, got.text
        state = await http.get(_path(thread_id) + "/state")
        assert state.json()["values"] == {"text": thread_id + "!"}, (thread_id, state.text)
        runs = await http.get(_path(thread_id) + "/runs")
        assert [run["status"] for run in runs.json()] == ["success"], (thread_id, runs.text)
    found = await http.post("/threads/search", json={"ids": THREAD_IDS, "limit": 100})
    assert sorted(t["thread_id"] for t in found.json()) == sorted(THREAD_IDS)
    again = await http.post("/threads", json={"thread_id": "casetest"})  # taken: the same one, not CaseTest
    assert again.status_code == 409, again.text


async def test_thread_ids_that_cannot_work_are_refused_naming_the_limit(http: httpx.AsyncClient) -> None:
    refused = [
        ("x" * 1001, "limit is 1000"),
        ("a\u0000b", "NUL"),
        ("", "empty"),
    ]
    for thread_id, says in refused:
        created = await http.post("/threads", json={"thread_id": thread_id})
        assert created.status_code == 422 and says in created.json()["detail"], (thread_id[:9], created.text)
        if thread_id:
            for method, suffix in (("GET", ""), ("GET", "/state"), ("POST", "/runs/wait")):
                body = {"assistant_id": "echo"} if method == "POST" else None
                answer = await http.request(method, _path(thread_id) + suffix, json=body)
                assert answer.status_code == 422 and "thread_id" in answer.json()["detail"], (suffix, answer.text)
            command = {"id": 1, "method": "state.get", "params": {}}
            answer = await http.post(_path(thread_id) + "/commands", json=command)
            refusal = answer.json()  # the protocol answers a refused command in its own envelope
            assert answer.status_code == 422 or refusal["type"] == "error", answer.text
            assert "thread_id" in json.dumps(refusal), answer.text
    surrogate = await http.post("/threads", content=b'{"thread_id": "a\\ud800"}')
    assert surrogate.status_code == 422 and "surrogate" in surrogate.json()["detail"], surrogate.text
    for value in (5, [], {}, True):  # null: the server makes an ID, as LangGraph's does
        wrong = await http.post("/threads", json={"thread_id": value})
        assert wrong.status_code == 422 and "thread_id" in wrong.json()["detail"], (value, wrong.text)


async def test_a_request_line_or_header_past_the_server_limits_is_4xx_not_a_hang(dev: Served) -> None:
    reader, writer = await asyncio.open_connection(*host_port(dev.url))
    try:
        writer.write(b"GET /threads/" + b"x" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        status, _ = await read_response(reader)
        assert 400 <= status < 500, status
    finally:
        writer.close()
    reader, writer = await asyncio.open_connection(*host_port(dev.url))
    try:
        writer.write(b"GET /info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"t" * 20000 + b"\r\n\r\n")
        await writer.drain()
        status, _ = await read_response(reader)
        assert 400 <= status < 500, status
    finally:
        writer.close()


async def test_a_thread_id_cannot_write_headers_into_an_answer(http: httpx.AsyncClient) -> None:
    thread_id = "crlf\r\nSet-Cookie: evil=1\r\nX-Evil: 1"
    created = await http.post("/threads", json={"thread_id": thread_id})
    assert created.status_code == 200, created.text
    body = {"assistant_id": "echo", "input": {"text": "x"}}
    for suffix in ("/runs/stream", "/runs", "/runs/wait"):
        async with http.stream("POST", _path(thread_id) + suffix, json=body) as response:
            await response.aread()
            assert response.status_code == 200, (suffix, response.text)
            assert "set-cookie" not in response.headers and "x-evil" not in response.headers, response.headers
            location = response.headers.get("Content-Location", "")
            assert "\r" not in location and "\n" not in location and location.startswith(_path(thread_id)), location
        if suffix == "/runs":
            run = response.json()
            joined = await http.get(_path(thread_id) + f"/runs/{run['run_id']}/join")
            assert joined.status_code == 200, joined.text


def _outward_address() -> str | None:
    """An address of this machine other than loopback, if it has one (no packet is sent)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.255", 9))  # TEST-NET: picks the outward interface
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def test_dev_serves_this_machine_only_by_default(dev: Served) -> None:
    host, port = host_port(dev.url)
    assert host == "127.0.0.1", dev.url
    outward = _outward_address()
    if outward is None:
        return  # no other interface to reach it through: loopback is all there is
    with pytest.raises(OSError):
        _, writer = await asyncio.wait_for(asyncio.open_connection(outward, port), 30)
        writer.close()


#: Path parameters, as sent on the wire: long, NUL, bytes no UTF-8 text has (a surrogate, 0xFF), an escaped
#: traversal, CR LF, and numbers where IDs are expected.
HOSTILE_SEGMENTS = ["x" * 5000, "%00", "%ED%A0%80", "%FF", "..%2F..", "%E7%BA%BF", "%20", "a%0D%0Ab", "-1", "0"]


async def test_hostile_path_parameters_get_4xx_on_every_route(http: httpx.AsyncClient, tmp_path: Path) -> None:
    tid = await a_thread(http)
    ran = await http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "echo", "input": {"text": "x"}})
    assert ran.status_code == 200, ran.text
    rid = (await http.get(f"/threads/{tid}/runs")).json()[0]["run_id"]
    usual = {"thread_id": tid, "run_id": rid, "assistant_id": "echo"}
    for method, template in await app_routes(tmp_path, cors=True):
        names = re.findall(r"\{(\w+)\}", template)
        if method == "HEAD":
            continue
        for name in names:
            for segment in HOSTILE_SEGMENTS:
                path = re.sub(
                    r"\{(\w+)\}",
                    lambda m, name=name, segment=segment: segment if m.group(1) == name else usual.get(m.group(1), "x"),
                    template,
                )
                body = {} if method in ("POST", "PUT", "PATCH") else None
                answer = await http.request(method, httpx.URL(dev_url(http) + path), json=body)
                assert answer.status_code < 500, (method, path[:80], answer.text[:200])
                if answer.status_code >= 400:
                    assert answer.json()["detail"], (method, path[:80])


def dev_url(http: httpx.AsyncClient) -> str:
    return str(http.base_url).rstrip("/")


async def test_racing_creates_of_one_thread_id_make_one_thread_and_409s(http: httpx.AsyncClient) -> None:
    thread_id = f"race-{uuid.uuid4().hex}"
    answers = await asyncio.gather(*[http.post("/threads", json={"thread_id": thread_id}) for _ in range(10)])
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] + [409] * 9, [(answer.status_code, answer.text[:120]) for answer in answers]
    assert all(thread_id in answer.json()["detail"] for answer in answers if answer.status_code == 409)


async def test_a_smuggled_request_is_refused_and_never_runs(dev: Served, http: httpx.AsyncClient) -> None:
    auth = f"Authorization: {AUTH['Authorization']}\r\n".encode()
    inner = b'{"thread_id": "smuggled"}'
    smuggled = b"POST /threads HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: %d\r\n\r\n%s" % (len(inner), inner)
    framings = [
        b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
        b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}" + smuggled,
        b"Transfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + smuggled,
    ]
    for framing in framings:
        reader, writer = await asyncio.open_connection(*host_port(dev.url))
        try:
            writer.write(b"POST /threads/search HTTP/1.1\r\nHost: x\r\n" + auth + framing)
            await writer.drain()
            status, _ = await read_response(reader)
            assert status == 400, (framing[:40], status)
        finally:
            writer.close()
    assert (await http.get("/threads/smuggled")).status_code == 404


async def test_credentials_no_text_can_hold_are_refused_not_a_500(dev: Served) -> None:
    for header in (
        b"Authorization: Bearer \xff\xfe",
        b"Authorization: Bearer t\xc3\xa9",
        b"X-Api-Key: \xed\xa0\x80",
        b"Authorization: \xff " + TOKEN.encode(),
    ):
        reader, writer = await asyncio.open_connection(*host_port(dev.url))
        try:
            writer.write(b"GET /info HTTP/1.1\r\nHost: x\r\n" + header + b"\r\nConnection: close\r\n\r\n")
            await writer.drain()
            status, body = await read_response(reader)
            assert status in (400, 401), (header, status, body)
        finally:
            writer.close()


async def test_unicode_and_url_special_thread_ids_work_through_the_sdk(dev: Served) -> None:
    from langgraph_sdk import get_client
    from langgraph_sdk.errors import NotFoundError

    client = get_client(url=dev.url, api_key=TOKEN)
    try:
        for thread_id in ("线程-🙂", "with space", "café", "x" * 1000, "a/b", "..", "a?b#c", "50%", "%41"):
            with contextlib.suppress(NotFoundError):  # the other thread-ID tests of this server may have made it
                await client.threads.delete(thread_id)
            await client.threads.create(thread_id=thread_id)
            assert await client.runs.wait(thread_id, "echo", input={"text": "sdk"}) == {"text": "sdk!"}
            assert (await client.threads.get_state(thread_id))["values"] == {"text": "sdk!"}
            assert [r["status"] for r in await client.runs.list(thread_id)] == ["success"]
            await client.threads.delete(thread_id)  # the other thread-ID tests of this server use some of them
    finally:
        await client.aclose()
