"""Admission in the thread's record (a pure function): each write of a new run is decided against the runs in flight
when it is applied, and runs deleted or forgotten stay named, with their last status, a bounded number of them."""

from __future__ import annotations

from typing import Any

from durabletask.extensions.langgraph._records import KEEP_GONE, KEEP_RUNS, apply, in_flight


def _thread() -> dict[str, Any]:
    record = apply(None, "put", {"record": {"thread_id": "t"}})
    assert record is not None
    return record


def _new(record: dict[str, Any], run_id: str, strategy: str, at: str = "a") -> dict[str, Any]:
    data = {"run": {"run_id": run_id, "status": "pending", "created_at": at}, "admit": strategy, "op": f"op-{run_id}"}
    found = apply(record, "run", data)
    assert found is not None
    return found


def test_reject_is_admitted_on_an_idle_thread_and_refused_while_a_run_is_in_flight() -> None:
    record = _new(_thread(), "r1", "reject")
    assert in_flight(record) == ["r1"] and "op-r1" in record["ops"]
    refused = _new(record, "r2", "reject")
    assert "r2" not in refused["runs"] and refused["refused"] == ["op-r2"] and "op-r2" not in refused["ops"]
    running = apply(refused, "run", {"run": {"run_id": "r1", "status": "running"}})
    assert running is not None and "r3" not in _new(running, "r3", "reject")["runs"]
    ended = apply(running, "run", {"run": {"run_id": "r1", "status": "success"}})
    assert ended is not None and in_flight(ended) == []
    assert in_flight(_new(ended, "r4", "reject")) == ["r4"]


def test_interrupt_and_rollback_name_the_runs_in_flight_they_cancel() -> None:
    record = _new(_thread(), "r1", "enqueue", "1")
    record = _new(record, "r2", "enqueue", "2")
    assert in_flight(record) == ["r1", "r2"] and "supersedes" not in record["runs"]["r2"]
    record = _new(record, "r3", "interrupt", "3")
    assert record["runs"]["r3"]["supersedes"] == ["r1", "r2"]
    record = _new(record, "r4", "rollback", "4")
    assert record["runs"]["r4"]["supersedes"] == ["r1", "r2", "r3"]
    # A later write of the same run (its status) is no admission: nothing is refused or named again.
    record = _new(record, "r4", "reject", "4")
    assert record["runs"]["r4"]["supersedes"] == ["r1", "r2", "r3"] and "refused" not in record


def test_a_run_write_on_a_deleted_thread_makes_nothing() -> None:
    assert apply(None, "run", {"run": {"run_id": "r", "status": "pending"}, "admit": "reject"}) is None


def test_deleted_and_trimmed_runs_stay_named_with_their_status_a_bounded_number() -> None:
    record = _new(_thread(), "r0", "enqueue")
    record = apply(record, "run", {"run": {"run_id": "r0", "status": "interrupted"}})
    record = apply(record, "forget_run", {"run_id": "r0"})
    assert record is not None and record["runs"] == {} and record["gone"] == {"r0": "interrupted"}
    for n in range(1, KEEP_RUNS + 2):
        record = apply(record, "run", {"run": {"run_id": f"r{n}", "status": "success", "created_at": f"{n:04}"}})
    assert record is not None and len(record["runs"]) == KEEP_RUNS and "r1" not in record["runs"]
    assert list(record["gone"].items()) == [("r0", "interrupted"), ("r1", "success")]
    for n in range(KEEP_GONE + 5):
        record = apply(record, "run", {"run": {"run_id": f"x{n}", "status": "error"}})
        record = apply(record, "forget_run", {"run_id": f"x{n}"})
    assert record is not None and len(record["gone"]) == KEEP_GONE and list(record["gone"])[-1] == f"x{KEEP_GONE + 4}"
