"""A run its server recorded but never handed to the thread's orchestration (the server stopped between the two
steps): once it has waited ``LOST_AFTER`` seconds, the next admission on the thread records it as ``error`` and no
longer counts it as in flight, so a ``reject`` run is accepted instead of answered 409 for ever."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from durabletask.extensions.langgraph._records import LOST_ERROR, apply, lost_runs
from durabletask.extensions.langgraph._server.runs_service import RunServiceImpl
from durabletask.extensions.langgraph._server.threads_records import Records
from durabletask.extensions.langgraph._server.threads_service import ThreadServiceImpl
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]
INPUT = {"topic": "x", "steps": []}
T0 = "2030-01-01T00:00:00+00:00"


def _run(run_id: str, **fields: Any) -> dict[str, Any]:
    return {"run_id": run_id, "status": "pending", "created_at": T0, **fields}


def test_only_a_pending_run_never_handed_over_for_long_enough_is_lost() -> None:
    runs = {
        "lost": _run("lost", submitted=False),
        "handed": _run("handed", submitted=True),
        "older_server": _run("older_server"),  # recorded before runs said whether they were handed over
        "running": _run("running", submitted=False, status="running"),
    }
    record = {"thread_id": "t", "runs": runs}
    assert lost_runs(record, "2030-01-01T00:00:30+00:00", 30.0) == ["lost"]
    assert lost_runs(record, "2030-01-01T00:00:29+00:00", 30.0) == []
    assert lost_runs(record, "2030-01-01T00:00:30+00:00", None) == []
    assert apply(record, "submitted", {"run_id": "lost"})["runs"]["lost"]["submitted"] is True  # type: ignore[index]
    assert "gone" not in (apply(record, "submitted", {"run_id": "gone"}) or {})["runs"]


def test_an_admission_ends_the_lost_run_and_is_not_refused_by_it() -> None:
    record: dict[str, Any] | None = {"thread_id": "t", "runs": {"lost": _run("lost", submitted=False)}}
    at = "2030-01-01T00:01:00+00:00"
    new = {"run": _run("new", created_at=at, submitted=False), "admit": "reject", "at": at, "op": "w"}
    record = apply(record, "run", {**new, "lost_after": 120.0})  # not lost yet: reject is refused
    assert record is not None and record["refused"] == ["w"] and record["runs"]["lost"]["status"] == "pending"
    record = apply(record, "run", {**new, "op": "w2", "lost_after": 30.0})
    assert record is not None and record["runs"]["new"]["status"] == "pending"
    assert record["runs"]["lost"] | {"status": "error", "error": LOST_ERROR, "lost_to": "new"} == record["runs"]["lost"]


class _ServerDied(Exception):
    """Stands for the server's end between the run's record and its hand-over."""


async def _lose_a_run(s: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A thread and the ID of a run whose server "stopped" once it had recorded the run, before handing it over."""
    original = RunServiceImpl._submit

    async def dies(*args: Any, **kwargs: Any) -> None:
        raise _ServerDied

    tid = (await s.sdk.threads.create())["thread_id"]
    monkeypatch.setattr(RunServiceImpl, "_submit", dies)
    answer = await s.http.post(f"/threads/{tid}/runs", json={"assistant_id": "chain", "input": INPUT})
    assert answer.status_code == 500, answer.text
    monkeypatch.setattr(RunServiceImpl, "_submit", original)
    record = await Records(s.ctx.client).read(tid)
    assert record is not None
    [(lost, run)] = record["runs"].items()
    assert run["status"] == "pending" and run["submitted"] is False
    return tid, lost


async def test_a_run_lost_between_its_record_and_its_orchestration_stops_blocking_its_thread(
    runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(runs_hub) as s:
        tid, lost = await _lose_a_run(s, monkeypatch)
        body = {"assistant_id": "chain", "input": INPUT, "multitask_strategy": "reject"}
        soon = await s.http.post(f"/threads/{tid}/runs", json=body)  # within LOST_AFTER: it may still be handed over
        assert soon.status_code == 409, soon.text
        monkeypatch.setattr(ThreadServiceImpl, "LOST_AFTER", 0.0)  # the lost run's time has come
        later = await s.http.post(f"/threads/{tid}/runs", json=body)
        assert later.status_code == 200, later.text
        monkeypatch.setattr(ThreadServiceImpl, "LOST_AFTER", 30.0)  # the new run is handed over in far less
        run_id = later.json()["run_id"]
        await s.sdk.runs.join(tid, run_id)
        assert (await s.sdk.runs.get(tid, run_id))["status"] == "success"
        assert (await s.sdk.runs.get(tid, lost))["status"] == "error"
        found = await Records(s.ctx.client).read(tid)
        assert found is not None and found["runs"][lost]["error"] == LOST_ERROR
        assert found["runs"][lost]["lost_to"] == run_id
        assert found["runs"][run_id]["submitted"] is True
        assert (await s.sdk.threads.get(tid))["status"] == "idle"


async def test_a_lost_run_ends_when_it_is_read(runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve(runs_hub) as s:
        tid, lost = await _lose_a_run(s, monkeypatch)
        assert (await s.sdk.threads.get(tid))["status"] == "busy"
        monkeypatch.setattr(ThreadServiceImpl, "LOST_AFTER", 0.0)
        async with asyncio.timeout(30):  # a read finds the run lost and has the record end it
            while (await s.sdk.runs.get(tid, lost))["status"] != "error":
                await asyncio.sleep(0.05)
        monkeypatch.setattr(ThreadServiceImpl, "LOST_AFTER", 30.0)
        assert (await s.sdk.threads.get(tid))["status"] == "idle"
        result = await s.sdk.runs.wait(tid, "chain", input=INPUT, multitask_strategy="reject")
        assert isinstance(result, dict) and result["topic"] == "x"
