"""The thread-centric protocol through langgraph-sdk's own ``threads.stream`` (SSE and WebSocket), against the
emulator, a worker and two servers of one task hub."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.langgraph_server.support_protocol import Servers, command, read_events, servers
from tests.langgraph_server.support_protocol_graphs import ANSWER

__all__ = ["servers"]

pytestmark = pytest.mark.timeout(300)

INPUT: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}


async def test_model_tokens_and_custom_events_arrive_as_the_sdk_reads_them(servers: Servers) -> None:
    async with get_client(url=servers.url) as client:
        async with client.threads.stream(assistant_id="chat") as thread:
            await thread.run.start(input=INPUT)
            streams = [s async for s in thread.messages]
            texts = []
            for stream in streams:
                texts.append("".join([t async for t in stream.text]))
        assert texts == [ANSWER]
        async with client.threads.stream(assistant_id="chat") as thread:
            await thread.run.start(input=INPUT)
            progress = [e["step"] async for e in thread.extensions["progress"]]
        assert progress == ["talk", "ask"]


async def test_a_cancelled_run_ends_every_iterator(servers: Servers) -> None:
    async with get_client(url=servers.url) as client:
        async with client.threads.stream(assistant_id="slow") as thread:
            run_id = (await thread.run.start(input={"steps": []}))["run_id"]
            seen = 0
            async for _event in thread.extensions["progress"]:
                seen += 1
                if seen == 2:
                    await client.runs.cancel(thread.thread_id, run_id)
            with pytest.raises(RuntimeError, match="cancelled"):
                await thread.output
        run = await client.runs.get(thread.thread_id, run_id)
    assert run["status"] != "success"


def test_a_stream_without_since_starts_at_a_newest_run_cancelled_before_it_ran(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    start = {"assistant_id": "slow", "input": {"steps": []}}
    first = command(servers.url, thread_id, "run.start", start).json()["result"]["run_id"]
    queued = command(servers.url, thread_id, "run.start", start).json()["result"]["run_id"]
    with httpx.Client(base_url=servers.url, timeout=60) as http:
        http.post(f"/threads/{thread_id}/runs/{queued}/cancel").raise_for_status()
        http.post(f"/threads/{thread_id}/runs/{first}/cancel?wait=true").raise_for_status()
        with (
            httpx.Client(base_url=servers.urls[1], timeout=120) as other,
            other.stream("POST", f"/threads/{thread_id}/stream/events", json={"channels": ["lifecycle"]}) as response,
        ):
            # The answer has begun: the stream has chosen where it starts (the queued run, the newest: it never ran,
            # and ends in its turn, after the run ahead of it).
            third = command(servers.url, thread_id, "run.start", start).json()["result"]["run_id"]
            seen: list[tuple[str, str]] = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])["params"]["data"]
                    seen.append((data["run_id"], data["event"]))
                    if data["run_id"] == third:
                        break
        http.post(f"/threads/{thread_id}/runs/{third}/cancel").raise_for_status()
    assert seen == [(queued, "running"), (queued, "failed"), (third, "running")]


def _all(since: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"channels": ["values", "updates", "messages", "lifecycle", "input", "custom"]}
    if since is not None:
        body["since"] = since
    return body


def test_events_resume_after_any_seq_from_the_other_server(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    response = command(servers.urls[0], thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    assert response.json()["type"] == "success", response.text
    # The run ends at its interrupt: lifecycle interrupted is its last event.
    first = read_events(servers.urls[0], thread_id, _all(), 1000, stop_at="interrupted")
    seqs = [e["seq"] for e in first]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [e["event_id"] for e in first] == [str(s) for s in seqs]
    assert first[0]["method"] == "lifecycle" and first[0]["params"]["data"]["event"] == "running"
    assert first[-1]["params"]["data"]["event"] == "interrupted"
    middle = first[len(first) // 2]["seq"]
    rest = read_events(servers.urls[1], thread_id, _all(middle), len(first), stop_at="interrupted")
    assert _same_but_time(rest, first, middle)
    by_header = read_events(
        servers.urls[1], thread_id, _all(), len(first), stop_at="interrupted", **{"Last-Event-ID": str(middle)}
    )
    assert _same_but_time(by_header, first, middle)


def _same_but_time(got: list[dict[str, Any]], first: list[dict[str, Any]], after: int) -> bool:
    def strip(e: dict[str, Any]) -> Any:
        return {**e, "params": {**e["params"], "timestamp": 0}}

    return [strip(e) for e in got] == [strip(e) for e in first if e["seq"] > after]


def test_filters_select_channels_and_namespaces(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    only = read_events(servers.url, thread_id, {"channels": ["input", "lifecycle"]}, 100, stop_at="interrupted")
    assert {e["method"] for e in only} == {"lifecycle", "input.requested"}
    asked = [e for e in only if e["method"] == "input.requested"]
    assert asked[0]["params"]["data"]["payload"] == {"question": "approve?"}
    named = read_events(
        servers.url, thread_id, {"channels": ["custom:progress", "lifecycle"]}, 100, stop_at="interrupted"
    )
    assert [e["params"]["data"]["step"] for e in named if e["method"] == "custom"] == ["talk", "ask"]
    rooted = {"channels": ["values", "lifecycle"], "namespaces": [[]], "depth": 0}
    assert all(
        e["params"]["namespace"] == [] for e in read_events(servers.url, thread_id, rooted, 100, stop_at="interrupted")
    )


def test_state_commands_read_and_fork(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    read_events(servers.url, thread_id, {"channels": ["lifecycle"]}, 100, stop_at="interrupted")
    state = command(servers.url, thread_id, "state.get", {"namespace": [], "keys": ["steps"]}).json()
    assert state["result"]["values"] == {"steps": ["talk"]}
    assert state["result"]["checkpoint"]["id"]
    listed = command(servers.url, thread_id, "state.listCheckpoints", {"limit": 2}).json()["result"]["checkpoints"]
    assert len(listed) == 2 and all(c["id"] and isinstance(c["step"], int) for c in listed)
    older = listed[-1]["id"]
    forked = command(servers.url, thread_id, "state.fork", {"checkpoint_id": older}).json()
    assert forked["type"] == "success" and forked["result"]["thread_id"] == thread_id
    missing = command(servers.url, thread_id, "state.fork", {"checkpoint_id": "nope"}).json()
    assert missing["error"] == "no_such_checkpoint" and "params.checkpoint_id" in missing["message"]


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"id": 1, "method": "run.start", "params": {}}, "invalid_argument", "params.assistant_id"),
        (
            {"id": 1, "method": "run.start", "params": {"assistant_id": "no-such-graph"}},
            "invalid_argument",
            "no-such-graph",
        ),
        ({"id": 2, "method": "run.fly", "params": {}}, "unknown_command", "run.fly"),
        ({"id": "x", "method": "run.start"}, "invalid_argument", "id"),
        (
            {"id": 3, "method": "input.respond", "params": {"interrupt_id": "ghost", "response": 1}},
            "no_such_interrupt",
            "params.interrupt_id",
        ),
        (
            {"id": 4, "method": "subscription.subscribe", "params": {"channels": ["values"]}},
            "not_supported",
            "WebSocket",
        ),
        (
            {
                "id": 5,
                "method": "run.start",
                "params": {"assistant_id": "chat", "langsmith_tracer": {"project_name": "p"}},
            },
            "not_supported",
            "params.langsmith_tracer",
        ),
        ({"id": 6, "method": "agent.getTree", "params": {"run_id": "ghost"}}, "no_such_run", "params.run_id"),
    ],
)
def test_bad_commands_get_protocol_errors_naming_the_field(servers: Servers, body: Any, code: str, field: str) -> None:
    with httpx.Client(base_url=servers.url, timeout=60) as http:
        response = http.post(f"/threads/{uuid.uuid4()}/commands", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "error" and answer["error"] == code and field in answer["message"]


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("path", "content", "headers", "status", "names"),
    [
        ("commands", b"{not json", {}, 422, "not valid JSON"),
        ("commands", b"[1,2]", {}, 422, "JSON object"),
        (
            "commands",
            b'{"id": 1, "method": "state.get", "params": {"x": ' + b"9" * 5000 + b"}}",
            {},
            422,
            "4300 digits",
        ),
        ("stream/events", b'{"channels": ["values"], "since": ' + b"9" * 5000 + b"}", {}, 422, "4300 digits"),
        ("commands", b"[" * 100_000 + b"]" * 100_000, {}, 422, "JSON"),
        ("stream/events", b"{}", {}, 422, "body.channels"),
        ("stream/events", b'{"channels": ["values"], "since": -3}', {}, 422, "body.since"),
        ("stream/events", b'{"channels": ["values"]}', {"Last-Event-ID": "12.0"}, 422, "Last-Event-ID"),
    ],
)
def test_bad_requests_get_a_4xx_naming_the_problem(
    servers: Servers, path: str, content: bytes, headers: dict[str, str], status: int, names: str
) -> None:
    with httpx.Client(base_url=servers.url, timeout=60) as http:
        response = http.post(f"/threads/{uuid.uuid4()}/{path}", content=content, headers=headers)
    assert response.status_code == status, response.text
    assert names in response.json()["detail"]


@pytest.mark.adversarial
async def test_a_websocket_answers_bad_frames_and_keeps_serving(servers: Servers) -> None:
    import websockets

    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    url = servers.url.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    async with websockets.connect(url) as ws:
        for frame in [
            "{oops",
            "[]",
            '{"id": 1, "method": "state.get", "params": {"x": ' + "9" * 5000 + "}}",
            "[" * 100_000 + "]" * 100_000,
            '{"id": 9, "method": "subscription.unsubscribe", "params": {"subscription_id": "s"}}',
        ]:
            await ws.send(frame)
            answer = json.loads(await ws.recv())
            assert answer["type"] == "error"
        await ws.send(b"binary")
        assert json.loads(await ws.recv())["error"] == "invalid_argument"
        await ws.send('{"id": 5, "method": "subscription.subscribe", "params": {"channels": ["lifecycle"]}}')
        ok = json.loads(await ws.recv())
        assert ok == {"type": "success", "id": 5, "result": {"subscription_id": "sub-1"}}
        first = json.loads(await asyncio.wait_for(ws.recv(), 120))
        assert first["method"] == "lifecycle"


def test_two_clients_on_one_thread_see_the_same_events(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    results: dict[int, list[dict[str, Any]]] = {}

    def read(i: int) -> None:
        results[i] = read_events(servers.urls[i], thread_id, _all(0), 1000, stop_at="interrupted")

    readers = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=240)
    assert results[0] and _same_but_time(results[0], results[1], 0)


def test_a_stream_opened_before_the_thread_exists_waits_for_its_first_run(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    found: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: found.extend(
            read_events(servers.url, thread_id, {"channels": ["lifecycle", "input"]}, 100, stop_at="interrupted")
        )
    )
    reader.start()
    command(servers.urls[1], thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    reader.join(timeout=240)
    assert [e["method"] for e in found] == ["lifecycle", "input.requested", "lifecycle"]


@pytest.mark.adversarial
async def test_a_thread_id_no_thread_can_have_is_refused(servers: Servers) -> None:
    import websockets

    with httpx.Client(base_url=servers.url, timeout=60) as http:
        response = http.post(f"/threads/{'x' * 5000}/stream/events", json={"channels": ["values"]})
    assert response.status_code == 422 and "thread_id" in response.json()["detail"]
    url = servers.url.replace("http://", "ws://") + f"/threads/{'x' * 5000}/stream/events"
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url):
            pass
    assert refused.value.response.status_code == 422


async def test_websocket_subscriptions_start_stop_and_resume_after_an_event(servers: Servers) -> None:
    import websockets

    thread_id = str(uuid.uuid4())
    started = command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT}).json()
    url = servers.urls[1].replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    async with websockets.connect(url) as ws:

        async def frame() -> dict[str, Any]:
            return dict(json.loads(await asyncio.wait_for(ws.recv(), 120)))

        await ws.send(json.dumps({"id": 1, "method": "subscription.subscribe", "params": _all()}))
        assert (await frame())["result"] == {"subscription_id": "sub-1"}
        events = []
        while not events or events[-1]["params"]["data"].get("event") != "interrupted":
            events.append(await frame())
        resume_after = events[2]["seq"]
        await ws.send(
            json.dumps(
                {
                    "id": 2,
                    "method": "subscription.reconnect",
                    "params": {"run_id": started["result"]["run_id"], "last_event_id": str(resume_after)},
                }
            )
        )
        assert (await frame()) == {"type": "success", "id": 2, "result": {"restored": True}}
        again = [await frame() for _ in range(len(events) - 3)]
        assert _same_but_time(again, events, resume_after)
        await ws.send(
            json.dumps({"id": 3, "method": "subscription.unsubscribe", "params": {"subscription_id": "sub-1"}})
        )
        assert (await frame()) == {"type": "success", "id": 3, "result": {}}
        await ws.send(json.dumps({"id": 4, "method": "state.get", "params": {"namespace": []}}))
        state = await frame()
        assert state["id"] == 4 and state["result"]["values"]["steps"] == ["talk"]


def test_an_injected_message_starts_a_run_on_the_thread(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "slow", "input": {"steps": []}})
    read_events(servers.url, thread_id, {"channels": ["lifecycle"]}, 100, stop_at="completed")
    injected = command(
        servers.url, thread_id, "input.inject", {"namespace": [], "message": {"role": "user", "content": "more"}}
    ).json()
    assert injected["type"] == "success", injected
    runs = [
        e["params"]["data"]
        for e in read_events(servers.url, thread_id, {"channels": ["lifecycle"]}, 100, stop_at="completed")
    ]
    assert runs[0]["run_id"] == injected["result"]["run_id"]
    state = command(servers.url, thread_id, "state.get", {"namespace": []}).json()["result"]["values"]
    assert state["messages"][-1]["content"] == "more" and state["steps"] == ["crawled", "crawled"]


def test_run_start_on_an_interrupted_thread_resumes_it_and_streams_start_at_the_newest_run(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "chat", "input": INPUT})
    first = read_events(servers.url, thread_id, _all(), 1000, stop_at="interrupted")
    second = command(servers.urls[1], thread_id, "run.start", {"assistant_id": "chat", "input": "ok"}).json()
    run_id = second["result"]["run_id"]
    events = read_events(servers.url, thread_id, _all(), 1000, stop_at="completed")
    assert events[0]["params"]["data"] == {"event": "running", "attempt": 1, "run_id": run_id}
    assert events[0]["seq"] > first[-1]["seq"]
    assert events[-1]["params"]["data"] == {"event": "completed", "run_id": run_id}
    state = command(servers.url, thread_id, "state.get", {"namespace": [], "keys": ["answer"]}).json()
    assert state["result"]["values"] == {"answer": "ok"}


@pytest.mark.adversarial
async def test_a_websocket_holds_at_most_64_subscriptions(servers: Servers) -> None:
    import websockets

    url = servers.url.replace("http://", "ws://") + f"/threads/{uuid.uuid4()}/stream/events"
    subscribe = {"method": "subscription.subscribe", "params": {"channels": ["lifecycle"]}}
    async with websockets.connect(url) as ws:
        for i in range(64):
            await ws.send(json.dumps({"id": i, **subscribe}))
            assert json.loads(await ws.recv())["type"] == "success"
        await ws.send(json.dumps({"id": 64, **subscribe}))
        refused = json.loads(await ws.recv())
    assert refused["error"] == "invalid_argument" and "at most 64 subscriptions" in refused["message"]


@pytest.mark.adversarial
async def test_a_websocket_frame_over_the_body_limit_closes_the_socket(servers: Servers) -> None:
    import websockets

    url = servers.url.replace("http://", "ws://") + f"/threads/{uuid.uuid4()}/stream/events"
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send("x" * (11 * 1024 * 1024))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 120)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big


def test_a_stream_dropped_mid_run_resumes_on_the_other_server_without_a_gap_or_a_repeat(servers: Servers) -> None:
    thread_id = str(uuid.uuid4())
    command(servers.url, thread_id, "run.start", {"assistant_id": "slow", "input": {"steps": []}})
    body = {"channels": ["custom", "lifecycle", "values"]}
    head = read_events(servers.urls[0], thread_id, body, 5)  # dropped while the node still runs
    assert len(head) == 5 and head[-1]["method"] == "custom"
    tail = read_events(servers.urls[1], thread_id, {**body, "since": head[-1]["seq"]}, 1000, stop_at="completed")
    whole = read_events(servers.urls[0], thread_id, {**body, "since": 0}, 1000, stop_at="completed")
    assert _same_but_time(head + tail, whole, 0)
    steps = [e["params"]["data"]["step"] for e in whole if e["method"] == "custom"]
    assert steps == list(range(30))
