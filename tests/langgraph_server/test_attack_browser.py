"""A web page of another site against a ``durabletask langgraph dev`` that has no token (the default).

CORS only hides answers from a page. What a page can send without a preflight (a "simple" POST, a WebSocket
handshake) or through a name it points at 127.0.0.1 (DNS rebinding) must not drive the server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

pytest.importorskip("aiohttp")

import aiohttp
import httpx

from tests.langgraph_server.support_surface import Served, run_cli
from tests.langgraph_server.test_attack_http import ORIGIN, host_port, write_attack_project

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

EVIL = "https://evil.example"
#: What a form or a fetch() without a preflight may send as its type.
SIMPLE_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]


@pytest.fixture(scope="module")
def open_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = write_attack_project(tmp_path_factory.mktemp("open") / "project")
    with run_cli(["langgraph", "dev", "--config", str(config), "--port", "0"]) as served:
        yield served


@pytest.fixture
async def http(open_dev: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=open_dev.url, timeout=60) as client:
        yield client


async def test_a_simple_cross_site_post_is_refused_and_does_nothing(http: httpx.AsyncClient) -> None:
    for kind in SIMPLE_TYPES:
        for path, body in (
            ("/threads", {"thread_id": "csrf"}),
            ("/threads/csrf-run/runs/wait", {"assistant_id": "echo", "input": {}, "if_not_exists": "create"}),
            ("/store/items/search", {}),
        ):
            sent = await http.post(path, content=json.dumps(body), headers={"Origin": EVIL, "Content-Type": kind})
            assert sent.status_code == 403, (path, kind, sent.text)
            assert "allow_origins" in sent.json()["detail"], sent.text
            assert "Access-Control-Allow-Origin" not in sent.headers
    for method in ("PUT", "PATCH", "DELETE"):
        sent = await http.request(method, "/threads/csrf", headers={"Origin": "null"})  # a sandboxed page
        assert sent.status_code == 403, (method, sent.text)
    for made in ("/threads/csrf", "/threads/csrf-run"):  # nothing was made, no run ran
        assert (await http.get(made)).status_code == 404, made


async def test_a_cross_site_websocket_is_refused(open_dev: Served, http: httpx.AsyncClient) -> None:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    url = f"{open_dev.url}/threads/{tid}/stream/events"
    async with aiohttp.ClientSession() as session:
        for origin in (EVIL, "null", "http://localhost.evil.example"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url, headers={"Origin": origin})
            assert refused.value.status == 403, origin
        for allowed in ({}, {"Origin": ORIGIN}, {"Origin": open_dev.url}):  # an SDK, http.cors, the server's own page
            async with session.ws_connect(url, headers=allowed) as ws:
                await ws.send_str(json.dumps({"id": 1, "method": "state.get", "params": {}}))
                assert (await ws.receive_json(timeout=60))["type"] == "success", allowed


async def test_the_server_own_and_the_configured_origins_still_work(open_dev: Served, http: httpx.AsyncClient) -> None:
    for origin in (ORIGIN, open_dev.url):
        made = await http.post("/threads", json={}, headers={"Origin": origin})
        assert made.status_code == 200, (origin, made.text)
    read = await http.get("/info", headers={"Origin": EVIL})  # reading is not acting; its answer stays hidden
    assert read.status_code == 200 and "Access-Control-Allow-Origin" not in read.headers


async def test_a_rebound_name_cannot_reach_a_loopback_server(open_dev: Served, http: httpx.AsyncClient) -> None:
    _, port = host_port(open_dev.url)
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", f"localhost.evil:{port}"):
        for method, path in (("GET", "/info"), ("POST", "/threads")):
            answer = await http.request(method, path, json={} if method == "POST" else None, headers={"Host": host})
            assert 400 <= answer.status_code < 500, (host, method, answer.text)
            assert "Host" in answer.json()["detail"] or "host" in answer.json()["detail"], answer.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"app.localhost:{port}"):
        answer = await http.get("/info", headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)
