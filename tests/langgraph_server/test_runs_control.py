"""Interrupts and resumes, cancels, multitask strategies and resumable streams, through langgraph_sdk."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.types import Command

from durabletask.extensions.langgraph import _requests as rq
from durabletask.extensions.langgraph._server.state import to_json
from durabletask.extensions.langgraph._server.threads_records import Records
from tests.langgraph_server.support_runs import RunsHub, Served, runs_emulator, runs_hub, serve
from tests.langgraph_server.support_runs_sse import read_frames

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


async def _status_becomes(s: Served, thread_id: str, run_id: str, wanted: str) -> dict[str, Any]:
    while True:
        run = await s.sdk.runs.get(thread_id, run_id)
        if run["status"] == wanted:
            return run
        await asyncio.sleep(0.02)


def _interrupt_values(result: Any) -> Any:
    return {**result, "__interrupt__": [i["value"] for i in result["__interrupt__"]]}


async def test_interrupt_then_command_resume_equals_durable_graph(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.wait(tid, "ask", input={"topic": "t"})
        ref_cfg = _cfg(uuid.uuid4().hex)
        reference = to_json(await s.durable("ask").ainvoke({"topic": "t"}, ref_cfg))
        assert _interrupt_values(first) == _interrupt_values(reference)
        assert (await s.sdk.threads.get(tid))["status"] == "interrupted"
        state = await s.sdk.threads.get_state(tid)
        assert state["next"] == ["ask"]
        assert [i["value"] for i in state["interrupts"]] == [{"question": "approve t?"}]
        second = await s.sdk.runs.wait(tid, "ask", command={"resume": "yes"})
        ref_second = await s.durable("ask").ainvoke(Command(resume="yes"), ref_cfg)
        assert second == ref_second == {"topic": "t", "steps": ["plan:t", "answer:yes", "write:t"]}
        assert (await s.sdk.threads.get(tid))["status"] == "idle"


async def test_interrupt_before_and_continue(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "b"}, interrupt_before=["write"])
        state = await s.sdk.threads.get_state(tid)
        assert state["next"] == ["write"]
        assert (await s.sdk.threads.get(tid))["status"] == "interrupted"
        done = await s.sdk.runs.wait(tid, "chain", input=None)
        assert done == {"topic": "b", "steps": ["plan:b", "write:b"]}


@pytest.mark.parametrize("graph", ["held", "held-under-a-long-graph-name"])
async def test_cancel_ends_a_running_run_and_the_thread_goes_on(runs_hub: RunsHub, tmp_path: Path, graph: str) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, graph, input={"topic": str(flag)}, stream_mode=["values"])
        await _status_becomes(s, tid, run["run_id"], "running")
        stream = asyncio.ensure_future(_collect(s.sdk.runs.join_stream(tid, run["run_id"])))
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True)
        assert (await s.sdk.runs.get(tid, run["run_id"]))["status"] == "interrupted"
        events = await asyncio.wait_for(stream, 60)
        assert events[0] == "metadata" and events[-1] == "end"
        flag.write_text("go")  # the held node ends; its result belongs to no run any more
        later = await s.sdk.runs.wait(tid, graph, input={"topic": str(flag)})
        assert later["steps"][0] == f"plan:{flag}"
        assert (await s.sdk.threads.get(tid))["status"] == "idle"


async def _written(path: Path, within: float) -> str:
    """The text of ``path`` once it is written; fails after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was not written within {within} s"
        await asyncio.sleep(0.05)
    return path.read_text()


async def test_a_heartbeating_node_sees_the_cancel(runs_hub: RunsHub, tmp_path: Path) -> None:
    topic = tmp_path / "beat"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "beat", input={"topic": str(topic)})
        # A run is "running" before its first task (LangGraph's __start__) has run, let alone the node: a cancel
        # sent then ends the run before the node starts, and the node never sees it.
        await _written(Path(f"{topic}.started"), 60)
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True)
        # The node's next look for a stop raises in its heartbeat (a batched look each second, or the slower
        # per-attempt check within a minute).
        assert await _written(Path(f"{topic}.cancelled"), 90) == "ActivityCancelledError"
        assert (await s.sdk.runs.get(tid, run["run_id"]))["status"] == "interrupted"


async def test_on_disconnect_cancel_while_waiting(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        body = {"assistant_id": "held", "input": {"topic": str(flag)}, "on_disconnect": "cancel"}
        with pytest.raises(httpx.ReadTimeout):
            await s.http.post(f"/threads/{tid}/runs/wait", json=body, timeout=1.0)  # the client gives up
        runs = await s.sdk.runs.list(tid)
        assert (await _status_becomes(s, tid, runs[0]["run_id"], "interrupted"))["status"] == "interrupted"
        flag.write_text("go")


async def test_on_disconnect_cancel(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        body = {"assistant_id": "held", "input": {"topic": str(flag)}, "on_disconnect": "cancel"}
        async with s.http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break  # the metadata event: then the client goes away
        runs = await s.sdk.runs.list(tid)
        run = await _status_becomes(s, tid, runs[0]["run_id"], "interrupted")
        assert run["status"] == "interrupted"
        flag.write_text("go")


async def test_rollback_removes_the_run_and_what_it_wrote(runs_hub: RunsHub, tmp_path: Path) -> None:
    done, held = tmp_path / "done", tmp_path / "held"
    done.write_text("go")
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "held", input={"topic": str(done)})
        before = await s.sdk.threads.get_state(tid)
        history = await s.sdk.threads.get_history(tid, limit=100)
        run = await s.sdk.runs.create(tid, "held", input={"topic": str(held)})
        await _status_becomes(s, tid, run["run_id"], "running")
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True, action="rollback")
        with pytest.raises(httpx.HTTPStatusError) as gone:
            await s.sdk.runs.get(tid, run["run_id"])
        assert gone.value.response.status_code == 404
        after = await s.sdk.threads.get_state(tid)
        assert after["values"] == before["values"]
        assert after["checkpoint"] == before["checkpoint"]
        assert [h["checkpoint"] for h in await s.sdk.threads.get_history(tid, limit=100)] == [
            h["checkpoint"] for h in history
        ]
        assert (await s.sdk.threads.get(tid))["values"] == before["values"]
        held.write_text("go")


async def test_a_failed_run_reports_its_error_and_the_thread_goes_on(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [p async for p in s.sdk.runs.stream(tid, "fragile", input={"topic": "boom"}, stream_mode="updates")]
        assert [p.event for p in parts] == ["metadata", "updates", "error", "end"]
        assert parts[2].data == {"error": "ValueError", "message": "the topic is boom"}
        run = (await s.sdk.runs.list(tid))[0]
        assert run["status"] == "error"
        assert (await s.sdk.threads.get(tid))["status"] == "error"
        waited = await s.http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "fragile", "input": {"topic": "boom"}}
        )
        assert waited.json() == {"__error__": {"error": "ValueError", "message": "the topic is boom"}}
        fine = await s.sdk.runs.wait(tid, "fragile", input={"topic": "ok"})
        assert fine == {"topic": "ok", "steps": ["plan:boom", "plan:boom", "plan:ok", "fine:ok"]}
        reference = s.durable("fragile")
        ref_cfg = {"configurable": {"thread_id": f"ref-{tid}"}}
        for topic in ("boom", "boom"):
            with pytest.raises(Exception, match="boom"):
                await reference.ainvoke({"topic": topic}, ref_cfg)
        assert await reference.ainvoke({"topic": "ok"}, ref_cfg) == fine
        _, frames = await read_frames(s.http, "GET", f"/threads/{tid}/runs/{run['run_id']}/stream")
        assert [f.event for f in frames] == ["metadata", "updates", "error", "end"]
        joined: list[str] = []
        stream = await s.sdk.threads.join_stream(tid, last_event_id="-1")
        async for part in stream:
            joined.append(part.event)
            if joined.count("end") == 3:
                break
        await stream.aclose()  # type: ignore[attr-defined]
        runs = " ".join(joined).split("metadata")[1:]
        assert [r.split()[-2:] for r in runs] == [["error", "end"], ["error", "end"], ["values", "end"]]


async def test_cancel_many(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        one, two = [(await s.sdk.threads.create())["thread_id"] for _ in range(2)]
        first = await s.sdk.runs.create(one, "held", input={"topic": str(flag)})
        queued = await s.sdk.runs.create(one, "held", input={"topic": str(flag)})
        other = await s.sdk.runs.create(two, "held", input={"topic": str(flag)})
        await _status_becomes(s, one, first["run_id"], "running")
        await _status_becomes(s, two, other["run_id"], "running")
        await s.sdk.runs.cancel_many(thread_id=one, run_ids=[queued["run_id"]])
        await _status_becomes(s, one, queued["run_id"], "interrupted")
        assert (await s.sdk.runs.get(one, first["run_id"]))["status"] == "running"
        await s.sdk.runs.cancel_many(status="running")
        await _status_becomes(s, one, first["run_id"], "interrupted")
        await _status_becomes(s, two, other["run_id"], "interrupted")
        bad = await s.http.post("/runs/cancel", json={"status": "sleeping"})
        assert bad.status_code == 422 and "status" in bad.json()["detail"]
        flag.write_text("go")


async def test_reject_holds_when_another_server_won_the_race(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await _status_becomes(s, tid, first["run_id"], "running")
        # A second server read the thread before the first run was recorded: its check let the run through.
        late = str(uuid.uuid4())
        cfg = {"configurable": {"thread_id": tid}}
        body = rq.run_body(
            {"topic": str(flag)},
            cfg,
            stream_modes=["values"],
            invoke=False,
            context=None,
            interrupt_before=None,
            interrupt_after=None,
        )
        await Records(s.ctx.client).write(
            tid,
            "run",
            {
                "run": {
                    "run_id": late,
                    "status": "pending",
                    "created_at": "z",
                    "graph_id": "held",
                    "stream_mode": ["values"],
                }
            },
        )
        await s.durable("held").asubmit("run", {**body, "record": True, "reject_if_busy": True}, cfg, request_id=late)
        refused = await _status_becomes(s, tid, late, "error")
        assert refused["status"] == "error"
        _, frames = await read_frames(s.http, "GET", f"/threads/{tid}/runs/{late}/stream")
        assert [f.event for f in frames] == ["metadata", "error", "end"] and "busy" in frames[1].data["message"]
        assert (await s.sdk.runs.get(tid, first["run_id"]))["status"] == "running"
        assert (await s.sdk.threads.get(tid))["status"] == "busy"
        flag.write_text("go")
        await s.sdk.runs.join(tid, first["run_id"])
        assert (await s.sdk.runs.get(tid, first["run_id"]))["status"] == "success"


async def test_after_seconds_delays_a_run_durably(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        later = await s.sdk.runs.create(tid, "chain", input={"topic": "later"}, after_seconds=600)
        assert (await s.sdk.runs.get(tid, later["run_id"]))["status"] == "pending"  # ten minutes to go
        await s.sdk.runs.cancel(tid, later["run_id"], wait=True)  # a cancel reaches a run that waits for its time
        assert (await s.sdk.runs.get(tid, later["run_id"]))["status"] == "interrupted"
        soon = await s.sdk.runs.create(tid, "chain", input={"topic": "soon"}, after_seconds=0.5)
        assert (await s.sdk.runs.join(tid, soon["run_id"]))["steps"] == ["plan:soon", "write:soon"]
        assert (await s.sdk.runs.get(tid, soon["run_id"]))["status"] == "success"


async def test_delete_a_run(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        running = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await _status_becomes(s, tid, running["run_id"], "running")
        busy = await s.http.delete(f"/threads/{tid}/runs/{running['run_id']}")
        assert busy.status_code == 409 and "cancel it" in busy.json()["detail"]
        flag.write_text("go")
        await s.sdk.runs.join(tid, running["run_id"])
        await s.sdk.runs.delete(tid, running["run_id"])
        with pytest.raises(httpx.HTTPStatusError) as gone:
            await s.sdk.runs.get(tid, running["run_id"])
        assert gone.value.response.status_code == 404
        assert await s.sdk.runs.list(tid) == []
        assert (await s.sdk.threads.get_state(tid))["values"]["steps"][-1] == f"write:{flag}"  # its work stays


async def _collect(parts: Any) -> list[str]:
    return [p.event async for p in parts]


async def test_multitask_reject_enqueue_interrupt(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await _status_becomes(s, tid, first["run_id"], "running")
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await s.sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="reject")
        assert refused.value.response.status_code == 409
        queued = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="enqueue")
        assert (await s.sdk.runs.get(tid, queued["run_id"]))["status"] == "pending"
        third = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="interrupt")
        assert (await s.sdk.runs.get(tid, first["run_id"]))["status"] == "interrupted"
        assert (await s.sdk.runs.get(tid, queued["run_id"]))["status"] == "interrupted"
        flag.write_text("go")
        await s.sdk.runs.join(tid, third["run_id"])
        assert (await s.sdk.runs.get(tid, third["run_id"]))["status"] == "success"


async def test_last_event_id_resumes_exactly_after_it(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "earlier"})
        while not (await Records(s.ctx.client).read(tid) or {}).get("stream_cursor"):
            await asyncio.sleep(0.02)  # the earlier run's end is noted: later runs read the stream from there
        body = {
            "assistant_id": "chain",
            "input": {"topic": "r"},
            "stream_mode": ["values", "updates"],
            "stream_resumable": True,
        }
        headers, frames = await read_frames(s.http, "POST", f"/threads/{tid}/runs/stream", json=body)
        run_id = frames[0].data["run_id"]
        assert headers["Content-Location"] == f"/threads/{tid}/runs/{run_id}"
        assert headers["Location"] == f"/threads/{tid}/runs/{run_id}/stream"
        assert all(f.id for f in frames) and len({f.id for f in frames}) == len(frames)
        for cut in range(len(frames)):
            _, again = await read_frames(
                s.http, "GET", f"/threads/{tid}/runs/{run_id}/stream", headers={"Last-Event-ID": frames[cut].id}
            )
            assert again == frames[cut + 1 :]
        _, whole = await read_frames(
            s.http, "GET", f"/threads/{tid}/runs/{run_id}/stream", headers={"Last-Event-ID": "-1"}
        )
        assert whole == frames
        record = await Records(s.ctx.client).read(tid)
        assert record is not None and record["runs"][run_id]["after"]


async def test_ids_only_with_stream_resumable(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        body = {"assistant_id": "chain", "input": {"topic": "n"}}
        _, frames = await read_frames(s.http, "POST", f"/threads/{tid}/runs/stream", json=body)
        assert [f.event for f in frames] == ["metadata", "values", "values", "values", "end"]
        assert all(f.id is None for f in frames)
