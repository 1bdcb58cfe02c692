"""What a thread's record starts as it changes (pure, no worker): a run's webhook once, when the run ends, and at
most one pending TTL check, which expires an idle thread and leaves a busy one to its run's end."""

from __future__ import annotations

from typing import Any

from durabletask.extensions.langgraph._records import apply
from durabletask.extensions.langgraph._records_effects import TTL_CHECK, effects

T0 = "2030-01-01T00:00:00+00:00"


def _record(**extra: Any) -> dict[str, Any]:
    return {"thread_id": "t", "created_at": T0, "updated_at": T0, "metadata": {}, "runs": {}, **extra}


def _step(state: dict[str, Any] | None, operation: str, data: dict[str, Any]) -> tuple[Any, list[tuple[str, Any]]]:
    after = apply(state, operation, data)
    return after, effects(state, after, operation, data)


def _run(run_id: str, status: str, at: str, **extra: Any) -> dict[str, Any]:
    return {"run": {"run_id": run_id, "status": status, "updated_at": at, **extra}, "at": at}


def test_a_runs_webhook_starts_once_when_it_ends() -> None:
    state, found = _step(None, "put", {"record": _record()})
    assert found == []
    state, found = _step(state, "run", _run("r1", "pending", T0, webhook="https://h.test/x", created_at=T0))
    state, found = _step(state, "run", _run("r1", "running", "2030-01-01T00:00:01+00:00"))
    assert found == [] and state["runs"]["r1"]["started_at"] == "2030-01-01T00:00:01+00:00"
    ended = {**_run("r1", "success", "2030-01-01T00:00:05+00:00"), "thread": {"values": {"t": "x", "b": "v"}}}
    state, found = _step(state, "run", ended)
    [(kind, value)] = found
    assert kind == "webhook" and value["webhook"] == "https://h.test/x" and value["status"] == "success"
    assert value["run_started_at"] == "2030-01-01T00:00:01+00:00" and value["run_ended_at"].endswith(":05+00:00")
    assert value["values"] == {"t": "x", "b": "v"} and value["run"]["run_id"] == "r1"
    _, again = _step(state, "run", _run("r1", "success", "2030-01-01T00:00:06+00:00"))
    assert again == []  # an end reported twice starts nothing more
    _, plain = _step(state, "run", _run("r2", "error", "2030-01-01T00:00:07+00:00"))
    assert plain == []  # a run without a webhook


def test_one_ttl_check_is_pending_and_a_write_moves_the_expiry() -> None:
    state, found = _step(None, "put", {"record": _record(ttl={"strategy": "delete", "ttl_minutes": 10})})
    assert found == [("check", "2030-01-01T00:10:00+00:00")]
    state, found = _step(state, "run", _run("r1", "pending", "2030-01-01T00:05:00+00:00"))
    assert found == [] and state["ttl"]["expires_at"] == "2030-01-01T00:15:00+00:00"  # the earlier check re-arms
    state, found = _step(state, TTL_CHECK, {"due": "2030-01-01T00:10:00+00:00"})
    assert found == [("check", "2030-01-01T00:15:00+00:00")]  # not expired yet: the check waits for the new expiry
    state, found = _step(state, TTL_CHECK, {"due": "2030-01-01T00:15:00+00:00"})
    assert found == []  # expired but busy: the run's end will write to it
    state, found = _step(state, "run", _run("r1", "success", "2030-01-01T00:20:00+00:00"))
    assert found == [("check", "2030-01-01T00:30:00+00:00")]
    state, found = _step(state, TTL_CHECK, {"due": "2030-01-01T00:30:00+00:00"})
    assert found == [("expire", {"thread_id": "t", "strategy": "delete", "due": "2030-01-01T00:30:00+00:00"})]


def test_a_shorter_ttl_is_armed_at_once_and_a_stale_check_rearms() -> None:
    state, _ = _step(None, "put", {"record": _record(ttl={"strategy": "delete", "ttl_minutes": 60})})
    patch = {"metadata": {}, "updated_at": T0, "ttl": {"strategy": "keep_latest", "ttl_minutes": 1}}
    state, found = _step(state, "patch", patch)
    assert found == [("check", "2030-01-01T00:01:00+00:00")]
    state, found = _step(state, TTL_CHECK, {"due": "2030-01-01T00:01:00+00:00"})
    assert found == [("expire", {"thread_id": "t", "strategy": "keep_latest", "due": "2030-01-01T00:01:00+00:00"})]
    later = {"metadata": {}, "updated_at": "2030-01-01T00:02:00+00:00"}
    state, found = _step(state, "patch", later)
    assert found == [("check", "2030-01-01T00:03:00+00:00")]


def test_a_check_for_a_deleted_thread_or_a_refused_creation_starts_nothing() -> None:
    assert _step(None, TTL_CHECK, {"due": T0}) == (None, [])
    state, _ = _step(None, "put", {"record": _record(ttl={"strategy": "delete", "ttl_minutes": 5})})
    again = {"record": _record(updated_at="2030-01-01T09:00:00+00:00", ttl={"strategy": "delete", "ttl_minutes": 5})}
    after, found = _step(state, "put", again)
    assert found == [] and after["ttl"]["expires_at"] == "2030-01-01T00:05:00+00:00"
