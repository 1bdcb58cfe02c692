"""A hostile client against the streams of ``durabletask langgraph dev``: garbage ``Last-Event-ID``, many streams
that disconnect, clients that are slow or never read, and WebSocket frames of every wrong kind.

The same project and ``dev`` process as test_attack_http.py (one per module). No assertion depends on time: a
stalled server shows as the test's timeout, a leak as descriptors that are never given back.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

import aiohttp
import httpx

from tests.langgraph_server.support_surface import Served
from tests.langgraph_server.test_attack_http import AUTH, LIMIT, dev, host_port, read_response

__all__ = ["dev"]
pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]


@pytest.fixture
async def http(dev: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=dev.url, headers=AUTH, timeout=60) as client:
        yield client


async def _finished_run(http: httpx.AsyncClient) -> tuple[str, str, list[str]]:
    """A thread, its finished resumable run, and the event IDs its stream carried."""
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    body = {"assistant_id": "echo", "input": {"text": "x"}, "stream_resumable": True, "stream_mode": ["values"]}
    async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
        run_id = response.headers["Content-Location"].rsplit("/", 1)[1]
        ids = [line[4:] for line in [line async for line in response.aiter_lines()] if line.startswith("id: ")]
    return tid, run_id, ids


def _ids(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("id: ")]


GARBAGE_IDS = ["not-an-id", "1e5", "1-2-3", "0x10", "9" * 5000, "1.2.3", "a.b", ".", "1.", "NaN", "inf"]


async def test_garbage_last_event_ids_are_422_naming_the_header(http: httpx.AsyncClient) -> None:
    tid, run_id, ids = await _finished_run(http)
    assert len(ids) >= 3, ids
    for garbage in GARBAGE_IDS:
        for method, path, body in (
            ("GET", f"/threads/{tid}/runs/{run_id}/stream", None),
            ("GET", f"/threads/{tid}/stream", None),
            ("POST", f"/threads/{tid}/stream/events", {"channels": ["values"]}),
        ):
            response = await http.request(method, path, json=body, headers={"Last-Event-ID": garbage})
            assert response.status_code == 422, (path, garbage[:20], response.text[:200])
            assert "Last-Event-ID" in response.json()["detail"], response.text[:200]
            assert len(response.text) < 1000, "the refusal quotes the whole garbage back"


async def test_last_event_id_bytes_no_text_can_hold_are_4xx(dev: Served, http: httpx.AsyncClient) -> None:
    tid, run_id, _ = await _finished_run(http)
    for raw in (b"\xc3\xa9", b"\xff\xfe", b"1.0\x00", b"1.0\x7f"):
        reader, writer = await asyncio.open_connection(*host_port(dev.url))
        try:
            request = (
                f"GET /threads/{tid}/runs/{run_id}/stream HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: {AUTH['Authorization']}\r\n"
            ).encode()
            writer.write(request + b"Last-Event-ID: " + raw + b"\r\nConnection: close\r\n\r\n")
            await writer.drain()
            status, _ = await read_response(reader)
            assert 400 <= status < 500, (raw, status)
        finally:
            writer.close()


async def test_a_resume_is_exact_and_past_the_end_ends_at_once(http: httpx.AsyncClient) -> None:
    tid, run_id, ids = await _finished_run(http)
    path = f"/threads/{tid}/runs/{run_id}/stream"
    for index, last in enumerate(ids[:-1]):
        again = await http.get(path, headers={"Last-Event-ID": last})
        assert again.status_code == 200 and _ids(again.text) == ids[index + 1 :], (last, again.text)
    for beyond in (ids[-1], "999999.0", "4000000000.0"):  # the run has ended: nothing to wait for
        response = await http.get(path, headers={"Last-Event-ID": beyond})
        assert response.status_code == 200 and _ids(response.text) == [], (beyond, response.text)
    other_tid, other_run, other_ids = await _finished_run(http)
    foreign = await http.get(path, headers={"Last-Event-ID": other_ids[-1]})  # another run's ID: a position here
    assert foreign.status_code == 200, foreign.text
    assert (other_tid, other_run) != (tid, run_id)


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _open_stream(dev: Served, tid: str, how: str) -> asyncio.StreamWriter:
    """A raw event-stream request whose answer's head has been read; the caller drops it."""
    reader, writer = await asyncio.open_connection(*host_port(dev.url))
    if how == "events":
        body = json.dumps({"channels": ["values", "lifecycle"]}).encode()
        head = f"POST /threads/{tid}/stream/events HTTP/1.1\r\nContent-Type: application/json\r\n"
    else:
        body = json.dumps({"assistant_id": "ask", "input": {"text": "q"}, "on_disconnect": "continue"}).encode()
        head = f"POST /threads/{tid}/runs/stream HTTP/1.1\r\nContent-Type: application/json\r\n"
    head += f"Host: x\r\nAuthorization: {AUTH['Authorization']}\r\nContent-Length: {len(body)}\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 120)
    assert b" 200 " in status_line, status_line
    return writer


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
async def test_many_streams_that_disconnect_leave_nothing_behind(dev: Served, http: httpx.AsyncClient) -> None:
    tids = [(await http.post("/threads", json={})).json()["thread_id"] for _ in range(8)]
    await asyncio.sleep(0)
    before = _descriptors(dev.process.pid)
    for _ in range(2):
        writers = await asyncio.gather(
            *[_open_stream(dev, tid, "events") for tid in tids for _ in range(4)],
            *[_open_stream(dev, tid, "run") for tid in tids[:4]],
        )
        for writer in writers:  # gone without a word: no close frame, no end of the request
            writer.transport.abort()
    ok = await http.get("/ok")  # and the server goes on serving
    assert ok.status_code == 200
    ran = await http.post("/runs/wait", json={"assistant_id": "echo", "input": {"text": "after"}})
    assert (ran.status_code, ran.json()) == (200, {"text": "after!"}), ran.text
    while _descriptors(dev.process.pid) > before + 4:  # the pytest timeout ends a leak
        await asyncio.sleep(0.2)
    statuses = {(await http.get(f"/threads/{tid}")).json()["status"] for tid in tids[:4]}
    assert statuses <= {"interrupted", "idle", "busy"}, statuses  # the runs went on (on_disconnect=continue)


async def test_slow_clients_do_not_stall_the_others(dev: Served, http: httpx.AsyncClient) -> None:
    host, port = host_port(dev.url)
    stalled: list[asyncio.StreamWriter] = []
    partials = [
        b"GET /ok HT",  # half a request line
        b"GET /ok HTTP/1.1\r\nHost: x\r\nAuthoriz",  # half a header
        f"POST /threads HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH['Authorization']}\r\n".encode()
        + b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"metadata":',  # a body that stops
        f"POST /threads HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH['Authorization']}\r\n".encode()
        + b'Transfer-Encoding: chunked\r\n\r\n5\r\n{"met\r\n',  # a chunked body that stops
    ]
    for partial in partials * 5:
        _, writer = await asyncio.open_connection(host, port)
        writer.write(partial)
        await writer.drain()
        stalled.append(writer)
    try:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "echo", "input": {"text": "meanwhile"}}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            events = [line async for line in response.aiter_lines() if line.startswith("event: ")]
        assert events[0] == "event: metadata" and events[-1] == "event: end", events
    finally:
        for writer in stalled:
            writer.transport.abort()


async def test_a_client_that_never_reads_its_stream_does_not_stall_the_others(
    dev: Served, http: httpx.AsyncClient
) -> None:
    big = "b" * (LIMIT // 2)
    readers: list[asyncio.StreamWriter] = []
    for _ in range(3):
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = json.dumps(
            {"assistant_id": "echo", "input": {"text": big}, "stream_mode": ["values", "updates", "debug", "tasks"]}
        ).encode()
        _, writer = await asyncio.open_connection(*host_port(dev.url))
        head = (
            f"POST /threads/{tid}/runs/stream HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH['Authorization']}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        readers.append(writer)  # and never read from
    try:
        for n in range(3):
            ran = await http.post("/runs/wait", json={"assistant_id": "echo", "input": {"text": str(n)}})
            assert (ran.status_code, ran.json()) == (200, {"text": f"{n}!"}), ran.text
    finally:
        for writer in readers:
            writer.transport.abort()


HOSTILE_FRAMES: list[tuple[str, Any]] = [
    ("text", "not json"),
    ("text", "[1]"),
    ("text", "null"),
    ("text", '"s"'),
    ("text", "[" * 20000 + "]" * 20000),
    ("text", json.dumps({"id": -1, "method": "state.get"})),
    ("text", json.dumps({"id": "1", "method": "state.get"})),
    ("text", json.dumps({"id": 1, "method": "x" * 1000})),
    ("text", json.dumps({"id": 1, "method": "nope.nothing"})),
    ("text", json.dumps({"id": 1, "method": "state.get", "params": []})),
    ("text", json.dumps({"id": 1, "method": "subscription.unsubscribe", "params": {"subscription_id": "sub-99"}})),
    ("text", json.dumps({"id": 1, "method": "subscription.subscribe", "params": {"channels": "values"}})),
    ("text", json.dumps({"id": 1, "method": "subscription.subscribe", "params": {"since": -5}})),
    ("text", json.dumps({"id": 1, "method": "subscription.reconnect", "params": {"last_event_id": "garbage"}})),
    ("text", json.dumps({"id": 1, "method": "run.start", "params": {"assistant_id": ["echo"]}})),
    ("text", json.dumps({"id": 1, "method": "input.respond", "params": {"responses": "yes"}})),
    ("text", '{"id": 1, "method": "state.get", "params": {"x": ' + "9" * 5000 + "}}"),  # too long for an int
    ("binary", b"\x00\x01\x02"),
]


async def test_every_wrong_websocket_frame_gets_an_error_and_the_socket_goes_on(
    dev: Served, http: httpx.AsyncClient
) -> None:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    url = f"{dev.url}/threads/{tid}/stream/events"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=AUTH) as ws:
        for n, (kind, frame) in enumerate(HOSTILE_FRAMES):
            if kind == "binary":
                await ws.send_bytes(frame)
            else:
                await ws.send_str(frame)
            answer = await ws.receive_json(timeout=60)
            assert answer["type"] == "error" and answer["message"], (frame[:60], answer)
            await ws.send_str(json.dumps({"id": 1000 + n, "method": "state.get", "params": {}}))
            alive = await ws.receive_json(timeout=60)
            assert (alive["type"], alive["id"]) == ("success", 1000 + n), (frame[:60], alive)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
async def test_many_websockets_that_vanish_mid_subscription_leave_nothing_behind(
    dev: Served, http: httpx.AsyncClient
) -> None:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    before = _descriptors(dev.process.pid)
    subscribe = json.dumps({"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"]}})
    for _ in range(2):
        sessions = [aiohttp.ClientSession() for _ in range(16)]
        sockets = [
            await session.ws_connect(f"{dev.url}/threads/{tid}/stream/events", headers=AUTH) for session in sessions
        ]
        for ws in sockets:
            await ws.send_str(subscribe)
            assert (await ws.receive_json(timeout=60))["type"] == "success"
        for session in sessions:  # the connections drop: no close frame
            connector = session.connector
            assert connector is not None
            await connector.close()
            await session.close()
    ran = await http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "echo", "input": {"text": "after"}})
    assert (ran.status_code, ran.json()) == (200, {"text": "after!"}), ran.text
    while _descriptors(dev.process.pid) > before + 4:  # the pytest timeout ends a leak
        await asyncio.sleep(0.2)


async def test_a_run_cannot_be_reached_through_another_thread(http: httpx.AsyncClient) -> None:
    owner, run_id, _ = await _finished_run(http)
    other = (await http.post("/threads", json={})).json()["thread_id"]
    for method, suffix in (
        ("GET", ""),
        ("GET", "/join"),
        ("GET", "/stream"),
        ("POST", "/cancel"),
        ("DELETE", ""),
    ):
        answer = await http.request(method, f"/threads/{other}/runs/{run_id}{suffix}")
        assert answer.status_code == 404, (method, suffix, answer.text[:200])
        assert "event:" not in answer.text, answer.text[:200]
    cancel_many = await http.post("/runs/cancel", json={"thread_id": other, "run_ids": [run_id]})
    assert cancel_many.status_code < 500, cancel_many.text  # refused, or nothing of the other thread's to cancel
    still = await http.get(f"/threads/{owner}/runs/{run_id}")
    assert still.status_code == 200 and still.json()["status"] == "success", still.text


async def test_an_interrupt_cannot_be_answered_through_another_thread(http: httpx.AsyncClient) -> None:
    async def interrupted() -> tuple[str, str]:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        ran = await http.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "ask", "input": {"text": tid}})
        assert ran.status_code == 200, ran.text
        state = (await http.get(f"/threads/{tid}/state")).json()
        return tid, state["tasks"][0]["interrupts"][0]["id"]

    owner, interrupt_id = await interrupted()
    other, _ = await interrupted()
    command = {"id": 7, "method": "input.respond", "params": {"interrupt_id": interrupt_id, "response": "stolen"}}
    answer = await http.post(f"/threads/{other}/commands", json=command)
    refusal = answer.json()
    assert answer.status_code >= 400 or refusal["type"] == "error", answer.text
    for tid in (owner, other):  # both still wait for their own answer
        state = (await http.get(f"/threads/{tid}/state")).json()
        assert state["next"] == ["node"] and "answer" not in state["values"], (tid, state)


async def test_a_flood_of_frames_is_answered_in_order_and_the_socket_survives(
    dev: Served, http: httpx.AsyncClient
) -> None:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    url = f"{dev.url}/threads/{tid}/stream/events"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=AUTH) as ws:
        for n in range(3000):  # sent without reading a single answer
            await ws.send_str(json.dumps({"id": n, "method": "no.such.method"}))
        await ws.send_str(json.dumps({"id": 99999, "method": "state.get", "params": {}}))
        seen = []
        while not seen or seen[-1]["id"] != 99999:
            seen.append(await ws.receive_json(timeout=120))
    assert [answer["id"] for answer in seen] == [*range(3000), 99999]
    assert {answer["type"] for answer in seen[:-1]} == {"error"} and seen[-1]["type"] == "success"


async def test_many_concurrent_streams_each_get_their_own_run_to_the_end(http: httpx.AsyncClient) -> None:
    async def one(n: int) -> tuple[list[str], Any]:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "echo", "input": {"text": f"s{n}"}, "stream_mode": ["values"]}
        events, last = [], None
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    events.append(line[7:])
                elif line.startswith("data: ") and events[-1] == "values":
                    last = json.loads(line[6:])
        return events, last

    results = await asyncio.gather(*[one(n) for n in range(24)])
    for n, (events, last) in enumerate(results):
        assert events[0] == "metadata" and events[-1] == "end", (n, events)
        assert last == {"text": f"s{n}!"}, (n, last)
