"""Threads through langgraph_sdk: create, get, update, delete, search, count, prune; state read, update, history."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]


def _cfg(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


async def test_crud_search_and_count(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        mine = f"owner-{uuid.uuid4().hex[:6]}"
        a = await s.sdk.threads.create(metadata={"owner": mine, "n": 1})
        b = await s.sdk.threads.create(thread_id="chosen-é-id", metadata={"owner": mine, "n": 2})
        assert b["thread_id"] == "chosen-é-id" and b["status"] == "idle" and b["values"] is None
        with pytest.raises(httpx.HTTPStatusError) as exists:
            await s.sdk.threads.create(thread_id="chosen-é-id")
        assert exists.value.response.status_code == 409
        again = await s.sdk.threads.create(thread_id="chosen-é-id", if_exists="do_nothing")
        assert again["metadata"]["n"] == 2
        updated = await s.sdk.threads.update(a["thread_id"], metadata={"tag": "x"})
        assert updated["metadata"] == {"owner": mine, "n": 1, "tag": "x"}
        found = await s.sdk.threads.search(metadata={"owner": mine})
        assert sorted(t["thread_id"] for t in found) == sorted([a["thread_id"], b["thread_id"]])
        assert [t["thread_id"] for t in await s.sdk.threads.search(metadata={"owner": mine, "tag": "x"})] == [
            a["thread_id"]
        ]
        assert await s.sdk.threads.count(metadata={"owner": mine}) == 2
        assert await s.sdk.threads.count(metadata={"owner": mine}, status="busy") == 0
        await s.sdk.threads.delete(a["thread_id"])
        with pytest.raises(httpx.HTTPStatusError) as gone:
            await s.sdk.threads.get(a["thread_id"])
        assert gone.value.response.status_code == 404
        assert await s.sdk.threads.count(metadata={"owner": mine}) == 1
        assert (await s.sdk.threads.prune([b["thread_id"]]))["pruned_count"] == 1
        assert await s.sdk.threads.count(metadata={"owner": mine}) == 0


async def test_deleting_a_thread_that_ran_removes_its_state(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "d"})
        await s.sdk.threads.delete(tid)
        await s.sdk.threads.create(thread_id=tid)
        assert (await s.sdk.threads.get_state(tid))["values"] == {}
        assert (await s.sdk.runs.wait(tid, "chain", input={"topic": "e"}))["steps"] == ["plan:e", "write:e"]


async def test_update_state_and_fork_from_a_checkpoint(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "u"})
        ref = uuid.uuid4().hex
        await s.durable("chain").ainvoke({"topic": "u"}, _cfg(ref))
        out = await s.sdk.threads.update_state(tid, {"steps": ["manual"]}, as_node="write")
        ref_config = await s.durable("chain").aupdate_state(_cfg(ref), {"steps": ["manual"]}, as_node="write")
        assert out["checkpoint"]["checkpoint_id"]
        state = await s.sdk.threads.get_state(tid)
        ref_state = await s.durable("chain").aget_state(_cfg(ref))
        assert state["values"] == ref_state.values
        assert (await s.sdk.threads.get(tid))["values"] == ref_state.values
        assert ref_config["configurable"]["checkpoint_id"]
        history = await s.sdk.threads.get_history(tid, limit=50)
        first_plan = next(h for h in reversed(history) if h["next"] == ["write"])
        at = await s.sdk.threads.get_state(tid, checkpoint_id=first_plan["checkpoint"]["checkpoint_id"])
        assert at["values"] == first_plan["values"] and at["next"] == ["write"]
        posted = await s.sdk.threads.get_state(tid, checkpoint=first_plan["checkpoint"])
        assert posted["values"] == at["values"]
        forked = await s.sdk.runs.wait(
            tid, "chain", input=None, checkpoint_id=first_plan["checkpoint"]["checkpoint_id"]
        )
        ref_history = [h async for h in s.durable("chain").aget_state_history(_cfg(ref), limit=50)]
        ref_plan = next(h for h in reversed(ref_history) if h.next == ("write",))
        ref_forked = await s.durable("chain").ainvoke(None, _cfg(ref, ref_plan.config["configurable"]["checkpoint_id"]))
        assert forked == ref_forked
        before = await s.sdk.threads.get_history(tid, limit=2, before=history[0]["checkpoint"])
        assert len(before) == 2 and before[0]["checkpoint"]["checkpoint_id"] < history[0]["checkpoint"]["checkpoint_id"]


async def test_threadless_runs(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        result = await s.sdk.runs.wait(None, "chain", input={"topic": "free"})
        assert result == {"topic": "free", "steps": ["plan:free", "write:free"]}
        parts = [p async for p in s.sdk.runs.stream(None, "chain", input={"topic": "free"}, stream_mode="updates")]
        assert [p.event for p in parts] == ["metadata", "updates", "updates", "end"]
        gone = await s.sdk.runs.create(None, "chain", input={"topic": "g"})
        while gone["thread_id"] in [t["thread_id"] for t in await s.sdk.threads.search(limit=100)]:
            await asyncio.sleep(0.05)  # a background threadless run's thread is deleted once the run ended
        kept = await s.sdk.runs.create(None, "chain", input={"topic": "k"}, on_completion="keep")
        assert (await s.sdk.runs.join(kept["thread_id"], kept["run_id"]))["steps"] == ["plan:k", "write:k"]
        assert (await s.sdk.threads.get(kept["thread_id"]))["status"] == "idle"


async def test_join_a_threads_stream(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        one = await s.sdk.runs.create(tid, "chain", input={"topic": "1"}, stream_mode="updates")
        two = await s.sdk.runs.create(tid, "chain", input={"topic": "2"}, stream_mode="updates")
        await s.sdk.runs.join(tid, two["run_id"])
        events: list[tuple[str, Any]] = []
        stream = await s.sdk.threads.join_stream(tid, last_event_id="-1")
        async for part in stream:
            events.append((part.event, part.data))
            if part.event == "end" and len([e for e, _ in events if e == "end"]) == 2:
                break
        await stream.aclose()  # type: ignore[attr-defined]
        runs = [d["run_id"] for e, d in events if e == "metadata"]
        assert runs == [one["run_id"], two["run_id"]]
        assert [e for e, _ in events] == ["metadata", "updates", "updates", "end"] * 2


async def test_copy_carries_metadata_and_checkpoints(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create(metadata={"kind": "original"}))["thread_id"]
        await s.sdk.runs.wait(tid, "ask", input={"topic": "c"})
        copy = await s.sdk.threads.copy(tid)
        assert copy["thread_id"] != tid and copy["metadata"]["kind"] == "original"
        assert copy["status"] == "interrupted"
        original_history = await s.sdk.threads.get_history(tid, limit=50)
        copied_history = await s.sdk.threads.get_history(copy["thread_id"], limit=50)
        assert [h["values"] for h in copied_history] == [h["values"] for h in original_history]
        assert [h["checkpoint"]["checkpoint_id"] for h in copied_history] == [
            h["checkpoint"]["checkpoint_id"] for h in original_history
        ]
        resumed = await s.sdk.runs.wait(copy["thread_id"], "ask", command={"resume": "ok"})
        assert resumed["steps"] == ["plan:c", "answer:ok", "write:c"]
        assert (await s.sdk.threads.get_state(tid))["next"] == ["ask"]  # the original still waits
        empty = await s.sdk.threads.copy((await s.sdk.threads.create())["thread_id"])
        assert empty["values"] is None and empty["status"] == "idle"


async def test_create_with_supersteps_equals_bulk_update_state(runs_hub: RunsHub) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import StateUpdate

    from tests.langgraph_server.support_runs_graphs import chain_builder

    steps = [
        {"updates": [{"values": {"topic": "s"}, "as_node": "__input__"}]},
        {"updates": [{"values": {"steps": ["manual"]}, "as_node": "plan"}]},
    ]
    async with serve(runs_hub) as s:
        made = await s.sdk.threads.create(graph_id="chain", supersteps=steps)
        tid = made["thread_id"]
        state = await s.sdk.threads.get_state(tid)
        plain = chain_builder().compile(checkpointer=InMemorySaver())
        cfg = _cfg("plain")
        plain.bulk_update_state(
            cfg,
            [[StateUpdate(u["values"], u["as_node"]) for u in step["updates"]] for step in steps],  # type: ignore[index]
        )
        reference = plain.get_state(cfg)
        assert made["values"] == state["values"] == reference.values
        assert state["next"] == list(reference.next)
        assert await s.sdk.runs.wait(tid, "chain", input=None) == plain.invoke(None, cfg)
        bad = await s.http.post("/threads", json={"metadata": {"graph_id": "chain"}, "supersteps": [{"updates": 3}]})
        assert bad.status_code == 422 and "supersteps[0].updates" in bad.json()["detail"]


async def test_select_fields_and_batches(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "q"})
        picked = await s.sdk.threads.get_state(tid, select=["next", "values.steps"])  # type: ignore[call-arg]
        assert picked == {"next": [], "values": {"steps": ["plan:q", "write:q"]}}
        runs = await s.sdk.runs.list(tid, select=["run_id", "status"])
        assert [set(r) for r in runs] == [{"run_id", "status"}]
        made = await s.sdk.runs.create_batch(
            [
                {"assistant_id": "chain", "input": {"topic": "b1"}},
                {"assistant_id": "chain", "input": {"topic": "b2"}, "thread_id": tid},
            ]  # type: ignore[list-item]
        )
        assert len(made) == 2 and made[1]["thread_id"] == tid
        assert (await s.sdk.runs.join(tid, made[1]["run_id"]))["steps"][-1] == "write:b2"
        bad = await s.http.post("/runs/batch", json=[{"assistant_id": "chain"}, {"assistant_id": "chain", "x": 1}])
        assert bad.status_code == 422 and "runs[1]" in bad.json()["detail"]
        bad_select = await s.http.get(f"/threads/{tid}/state?select=secrets")
        assert bad_select.status_code == 422 and "select" in bad_select.json()["detail"]


async def test_deleting_a_thread_ends_its_streams(runs_hub: RunsHub, tmp_path: Any) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        while (await s.sdk.runs.get(tid, run["run_id"]))["status"] != "running":
            await asyncio.sleep(0.02)
        run_stream = asyncio.ensure_future(_events(s.sdk.runs.join_stream(tid, run["run_id"])))
        thread_stream = asyncio.ensure_future(_events(await s.sdk.threads.join_stream(tid, last_event_id="-1")))
        await asyncio.sleep(0.5)
        await s.sdk.threads.delete(tid)
        assert (await asyncio.wait_for(run_stream, 60))[-1] == "end"
        assert (await asyncio.wait_for(thread_stream, 60))[0] == "metadata"
        flag.write_text("go")


async def _events(parts: Any) -> list[str]:
    return [p.event async for p in parts]


async def test_large_values_are_read_from_the_state(runs_hub: RunsHub) -> None:
    big = "x" * 200_000
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create(metadata={"size": "big"}))["thread_id"]
        result = await s.sdk.runs.wait(tid, "chain", input={"topic": big})
        assert result["topic"] == big and len(result["steps"]) == 2
        assert (await s.sdk.threads.get(tid))["values"] == result
        found = await s.sdk.threads.search(metadata={"size": "big"})
        assert [t["thread_id"] for t in found] == [tid] and found[0]["values"] is None  # kept out of the record
        kwargs = (await s.sdk.runs.list(tid))[0]["kwargs"]
        assert kwargs["input"].startswith("<not kept") and kwargs["stream_mode"] == ["values"]


async def test_prune_keep_latest(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "ask", input={"topic": "p"})  # waits at its interrupt
        before = await s.sdk.threads.get_state(tid)
        assert len(await s.sdk.threads.get_history(tid, limit=50)) > 1
        assert (await s.sdk.threads.prune([tid], strategy="keep_latest"))["pruned_count"] == 1
        history = await s.sdk.threads.get_history(tid, limit=50)
        assert [h["checkpoint"] for h in history] == [before["checkpoint"]]
        after = await s.sdk.threads.get_state(tid)
        assert after["values"] == before["values"] and after["next"] == ["ask"]
        done = await s.sdk.runs.wait(tid, "ask", command={"resume": "yes"})
        assert done["steps"] == ["plan:p", "answer:yes", "write:p"]
