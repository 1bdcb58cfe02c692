"""A thread's TTL expiry against a run made at the same moment: the record marks the thread as expiring in the
operation that decides to expire it, so a run is either refused and answered 404 (the thread deleted) or admitted
once the thread is kept (pruned), never admitted and then lost with the thread. The interleaving is injected: the
expiry is held at its deletion while the run is made, then released."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from durabletask.extensions.langgraph._records import apply
from durabletask.extensions.langgraph._records_effects import effects
from durabletask.extensions.langgraph._server.runs_service import RunServiceImpl
from durabletask.extensions.langgraph._server.threads_records import Records
from durabletask.extensions.langgraph._server.threads_service import ThreadServiceImpl
from tests.langgraph_server.support_runs import RunsHub
from tests.langgraph_server.support_ttl import advance, clocked_emulator, clocked_hub, record_when
from tests.langgraph_server.support_webhooks import serve

__all__ = ["clocked_emulator", "clocked_hub"]
pytestmark = [pytest.mark.timeout(180)]
INPUT = {"topic": "x", "steps": []}


def _expiring_record() -> dict[str, Any]:
    due = "2030-01-01T00:01:00+00:00"
    ttl = {"strategy": "delete", "ttl_minutes": 1, "expires_at": due}
    record = {"thread_id": "t", "updated_at": "2030-01-01T00:00:00+00:00", "runs": {}, "ttl": ttl}
    after = apply(record, "ttl_check", {"due": due})
    assert after is not None
    assert [kind for kind, _ in effects(record, after, "ttl_check", {"due": due})] == ["expire"]
    return after


def test_the_check_that_decides_to_expire_marks_the_thread_and_new_runs_are_refused() -> None:
    record = _expiring_record()
    assert record["expiring"] == record["ttl"]["expires_at"]
    run = {"run_id": "r", "status": "pending", "created_at": "2030-01-01T00:01:01+00:00"}
    refused = apply(record, "run", {"run": run, "admit": "enqueue", "op": "w", "at": run["created_at"]})
    assert refused is not None and refused["runs"] == {} and refused["refused"] == ["w"]
    # A second check while the expiry is under way starts no second one.
    again = dict(record)
    assert effects(record, again, "ttl_check", {"due": record["ttl"]["expires_at"]}) == []
    # Its end (the thread kept) admits runs again.
    kept = apply(record, "expire_end", {"due": record["ttl"]["expires_at"]})
    assert kept is not None and "expiring" not in kept
    admitted = apply(kept, "run", {"run": run, "admit": "enqueue", "op": "w2", "at": run["created_at"]})
    assert admitted is not None and admitted["runs"]["r"]["status"] == "pending"


def test_a_kept_thread_is_not_expired_twice_for_one_due_time() -> None:
    due = _expiring_record()["ttl"]["expires_at"]
    kept = apply(_expiring_record(), "expire_end", {"due": due})
    assert kept is not None and kept["expired"] == due
    assert effects(kept, dict(kept), "expire_end", {"due": due}) == []  # ending an expiry arms no new check
    again = apply(kept, "ttl_check", {"due": due})
    assert again is not None and effects(kept, again, "ttl_check", {"due": due}) == []
    assert "expiring" not in again


class _Held:
    """A seam in the expiry's activity: it stops there until the test releases it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.held, self.release = threading.Event(), threading.Event()
        original = getattr(ThreadServiceImpl, name)

        async def held(service: ThreadServiceImpl, thread_id: str) -> None:
            self.held.set()
            await asyncio.to_thread(self.release.wait, 60)
            await original(service, thread_id)

        monkeypatch.setattr(ThreadServiceImpl, name, held)

    async def reached(self) -> None:
        assert await asyncio.to_thread(self.held.wait, 60)


def _run_waits_on_expiry(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Set once a run's admission has found the thread expiring (so the run is made inside the held window)."""
    entered = asyncio.Event()
    original = RunServiceImpl._admit

    async def admit(self: RunServiceImpl, thread_id: str, data: Any, busy: str, record: dict[str, Any]) -> Any:
        if record.get("expiring"):
            entered.set()
        return await original(self, thread_id, data, busy, record)

    monkeypatch.setattr(RunServiceImpl, "_admit", admit)
    return entered


async def test_a_run_made_while_its_thread_is_deleted_gets_404(
    clocked_hub: RunsHub, clocked_emulator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seam = _Held(monkeypatch, "delete")
    entered = _run_waits_on_expiry(monkeypatch)
    async with serve(clocked_hub) as s:
        records = Records(s.ctx.client)
        tid = (await s.sdk.threads.create(ttl=1))["thread_id"]
        advance(clocked_emulator, 2)
        await seam.reached()  # the record decided: the thread is expiring, its deletion not yet done
        marked = await records.read(tid)
        assert marked is not None and marked.get("expiring") and not marked["runs"]
        # The record itself refuses the run the server writes, whichever server sends it.
        refused = {"run": {"run_id": "direct", "status": "pending", "created_at": "x"}, "admit": "enqueue"}
        with pytest.raises(Exception) as direct:
            await records.write(tid, "run", refused, refused="busy")
        assert getattr(direct.value, "status", None) == 409
        made = asyncio.create_task(s.sdk.runs.create(tid, "chain", input=INPUT))
        async with asyncio.timeout(30):
            await entered.wait()
        seam.release.set()
        with pytest.raises(httpx.HTTPStatusError) as missing:
            await made
        assert missing.value.response.status_code == 404
        assert await record_when(records, tid, lambda r: r is None) is None


async def test_a_run_made_while_its_thread_is_pruned_runs_and_the_thread_stays(
    clocked_hub: RunsHub, clocked_emulator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seam = _Held(monkeypatch, "keep_latest")
    entered = _run_waits_on_expiry(monkeypatch)
    async with serve(clocked_hub) as s:
        records = Records(s.ctx.client)
        tid = (await s.sdk.threads.create(ttl={"ttl": 1, "strategy": "keep_latest"}))["thread_id"]
        advance(clocked_emulator, 2)
        await seam.reached()
        made = asyncio.create_task(s.sdk.runs.create(tid, "chain", input=INPUT))
        async with asyncio.timeout(30):
            await entered.wait()
        assert not (await records.read(tid) or {}).get("runs")  # not admitted while the thread is expiring
        seam.release.set()
        run = await made
        await s.sdk.runs.join(tid, run["run_id"])
        found = await records.read(tid)
        assert found is not None and "expiring" not in found
        assert found["runs"][run["run_id"]]["status"] == "success"
