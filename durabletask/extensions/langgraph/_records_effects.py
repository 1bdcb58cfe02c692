"""What a thread's record starts when it changes: a run's webhook delivery, and the durable timer of its TTL.

Both hang off the record entity (``lg.thread``) because every status a run reaches and every write that touches a
thread goes through it, whichever server or worker made it. The entity starts a webhook's delivery orchestration
when a run that names a webhook ends, and keeps at most one delayed signal to itself (``ttl_check``) pending for the
thread's TTL: when it arrives and the thread has expired, it starts the orchestration that deletes (or prunes) the
thread. Neither needs a server process at that moment; both survive restarts, as entity signals and orchestrations
do. :func:`effects` is pure, so it is tested without a worker.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

#: The orchestration that delivers one run's webhook (started once per run, its instance ID derived from the run's).
WEBHOOK_ORCHESTRATION = "lgs.webhook"
#: The orchestration that expires one thread when its TTL has run out.
TTL_ORCHESTRATION = "lgs.thread_ttl"
#: The record's operation that a TTL's delayed signal carries.
TTL_CHECK = "ttl_check"
#: The record's operation that ends an expiry that kept the thread (see :func:`expire_end`).
EXPIRE_END = "expire_end"
_ENDED = ("success", "error", "interrupted", "timeout")
#: The status a run rolled back ends with in its orchestration. Its record keeps it ``interrupted``, marked
#: ``rollback``, until the server forgets it (LangGraph's server deletes such a run); its webhook says ``rollback``.
ROLLBACK = "rollback"
#: What LangGraph's server's webhook says of a rolled-back run (its ``UserRollback``, as its serializer writes it).
ROLLBACK_ERROR = {"error": "UserRollback", "message": "User requested rollback of the run"}


def _parse(moment: Any) -> datetime | None:
    if not isinstance(moment, str) or not moment:
        return None
    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _op_time(state: dict[str, Any], operation: str, data: dict[str, Any]) -> datetime | None:
    """When the write happened: the moment it carries (a TTL check: the moment it was due)."""
    if operation == TTL_CHECK:
        return _parse(data.get("due"))
    if operation == "put":
        return _parse((data.get("record") or {}).get("updated_at"))
    return _parse(data.get("at") or data.get("updated_at")) or _parse(state.get("updated_at"))


def webhook_instance(run_id: str) -> str:
    """The instance ID of a run's webhook delivery: one per run, so a repeated start is a no-op."""
    return f"lgs.webhook-{run_id}"


def ttl_instance(thread_id: str, due: str) -> str:
    """The instance ID of a thread's expiry at ``due``."""
    return f"lgs.ttl-{hashlib.sha256(f'{thread_id}|{due}'.encode('utf-8', 'surrogatepass')).hexdigest()[:40]}"


def _ended_runs(before: dict[str, Any], after: dict[str, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    update = data.get("run") or {}
    run_id = str(update.get("run_id")) if update.get("run_id") is not None else None
    if run_id is None or update.get("status") not in _ENDED:
        return []
    was = ((before.get("runs") or {}).get(run_id) or {}).get("status")
    run = (after.get("runs") or {}).get(run_id) or {}
    return [run] if was not in _ENDED and run.get("webhook") else []


def run_update(run_id: str, status: str, at: str, error: str | None) -> dict[str, Any]:
    """A run's fields as its thread's orchestration reports them (``status`` may be :data:`ROLLBACK`)."""
    update: dict[str, Any] = {"run_id": run_id, "status": "interrupted" if status == ROLLBACK else status}
    update["updated_at"] = at
    if status == ROLLBACK:
        update["rollback"] = True
    if error:
        update["error"] = error
    return update


def run_kwargs(run: dict[str, Any]) -> dict[str, Any]:
    """A recorded run's ``kwargs`` as LangGraph's server keeps them: also the options the record keeps beside them
    (``webhook``, ``subgraphs``, ``resumable``, ``temporary``) and those every run here has (``feedback_keys`` null,
    ``checkpoint_during`` true: other values are refused)."""
    return {
        **(run.get("kwargs") or {}),
        "webhook": run.get("webhook"),
        "feedback_keys": None,
        "temporary": bool(run.get("threadless")) and run.get("on_completion") == "delete",
        "subgraphs": bool(run.get("subgraphs")),
        "resumable": bool(run.get("resumable")),
        "checkpoint_during": True,
    }


def webhook_input(record: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """What the delivery orchestration gets: the run as it ended, and the thread's values then (serialized); none
    for a rolled-back run, as LangGraph's server sends."""
    rolled_back = bool(run.get("rollback"))
    return {
        "run": {**{key: run.get(key) for key in RUN_KEYS}, "kwargs": run_kwargs(run)},
        "webhook": run.get("webhook"),
        "status": ROLLBACK if rolled_back else run.get("status"),
        "error": error_json(run),
        "run_started_at": run.get("started_at") or run.get("created_at"),
        "run_ended_at": run.get("updated_at"),
        "values": None if rolled_back else record.get("values"),
    }


#: The run's own fields a webhook carries (its payload may be narrowed to these and the delivery's own fields).
RUN_KEYS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "metadata",
    "kwargs",
    "multitask_strategy",
)


#: What LangGraph's server writes of a run cancelled (its ``UserInterrupt``, as its serializer writes it).
INTERRUPTED_ERROR = {"error": "UserInterrupt", "message": "User interrupted the run"}


def error_json(run: dict[str, Any]) -> dict[str, Any] | None:
    """The error a run ended with, as LangGraph's server writes it on the run's thread: ``{error, message}``."""
    if run.get("rollback"):
        return dict(ROLLBACK_ERROR)
    error = run.get("error")
    if isinstance(error, str) and error:
        kind, _, message = error.partition(": ")
        return {"error": kind.rsplit(".", 1)[-1], "message": message}
    return dict(INTERRUPTED_ERROR) if run.get("status") == "interrupted" else None


def _note_state(after: dict[str, Any], data: dict[str, Any]) -> None:
    """A run's end, or an update of the thread's state, writes its state: when (``state_updated_at``), and the error
    that left it so (``error``: null unless a run failed or was cancelled), as LangGraph's server keeps them."""
    thread = data.get("thread") or {}
    update = data.get("run") or {}
    # An admission, or a run that starts, writes no state: only the thread's status (``busy``) and graph.
    if thread.get("status") in (None, "busy") or not data.get("at") or update.get("status") in ("pending", "running"):
        return
    run = (after.get("runs") or {}).get(str(update.get("run_id"))) if update else None
    after["state_updated_at"] = data["at"]
    after["error"] = error_json(run) if run is not None else None


def _note_start(after: dict[str, Any], data: dict[str, Any]) -> None:
    update = data.get("run") or {}
    run = (after.get("runs") or {}).get(str(update.get("run_id")))
    if run is not None and update.get("status") == "running" and not run.get("started_at"):
        run["started_at"] = update.get("updated_at") or data.get("at")


def _ttl_effects(
    before: dict[str, Any], after: dict[str, Any], operation: str, data: dict[str, Any]
) -> list[tuple[str, Any]]:
    ttl = after.get("ttl")
    if operation == EXPIRE_END:
        return []  # no write to the thread: a kept thread's TTL starts again at its next write
    if not isinstance(ttl, dict) or not isinstance(ttl.get("ttl_minutes"), (int, float)):
        return []
    if operation == "put" and before.get("thread_id") is not None:
        return []  # a refused creation of a thread that exists changes nothing
    after["ttl"] = ttl = dict(ttl)
    at = _op_time(before, operation, data)
    touched = operation in ("put", "patch") or (operation == "run" and data.get("at"))
    if touched and at is not None:  # a write to the thread starts its TTL again
        ttl["expires_at"] = (at + timedelta(minutes=float(ttl["ttl_minutes"]))).isoformat()
    expires = _parse(ttl.get("expires_at"))
    if expires is None or at is None:
        return []
    out: list[tuple[str, Any]] = []
    if operation == TTL_CHECK and expires <= at:
        idle = not any(r.get("status") in ("pending", "running") for r in (after.get("runs") or {}).values())
        # One expiry per due time: a kept (pruned) thread is not expired again until a write starts its TTL anew.
        if idle and not after.get("expiring") and after.get("expired") != ttl["expires_at"]:
            # Marked in the operation that decides: from now on the record refuses new runs until the expiry ends
            # (``expire_end``), so none is admitted between this decision and the thread's deletion.
            after["expiring"] = ttl["expires_at"]
            out.append(
                ("expire", {"thread_id": after["thread_id"], "strategy": ttl.get("strategy"), "due": ttl["expires_at"]})
            )
        return out  # a busy thread: the end of its run writes to it, and so arms the TTL again
    pending = _parse(after.get("ttl_check"))
    if expires > at and (pending is None or pending > expires):
        after["ttl_check"] = ttl["expires_at"]
        out.append(("check", ttl["expires_at"]))
    return out


def effects(
    before: dict[str, Any] | None, after: dict[str, Any] | None, operation: str, data: dict[str, Any]
) -> list[tuple[str, Any]]:
    """What to start after ``operation`` turned ``before`` into ``after`` (which it may complete in place).

    Returns ``("webhook", input)``, ``("check", due)`` (a delayed ``ttl_check`` signal to the record) and
    ``("expire", input)`` items.
    """
    if after is None or after.get("thread_id") is None:
        return []
    before = before or {}
    out: list[tuple[str, Any]] = []
    if operation == "run":
        _note_start(after, data)
        _note_state(after, data)
        out += [("webhook", webhook_input(after, run)) for run in _ended_runs(before, after, data)]
    out += _ttl_effects(before, after, operation, data)
    return out


def ttl_check(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """The record's ``ttl_check`` operation: the pending check has arrived (see :func:`effects`)."""
    if not state:
        return None  # the thread was deleted meanwhile
    if state.get("ttl_check") == data.get("due"):
        state.pop("ttl_check", None)
    return state


def expire_end(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """The record's ``expire_end`` operation: the thread's expiry at ``due`` is over (it was pruned, or found written
    to since, or failed), so the record admits runs again."""
    if not state:
        return None  # the thread was deleted
    if state.get("expiring") == data.get("due"):
        state.pop("expiring", None)
        state["expired"] = data.get("due")
    return state


def perform(ctx: Any, entity_id: Any, found: list[tuple[str, Any]]) -> None:
    """Start what :func:`effects` found, from the record entity's operation ``ctx``."""
    for kind, value in found:
        if kind == "webhook":
            ctx.schedule_new_orchestration(
                WEBHOOK_ORCHESTRATION, input=value, instance_id=webhook_instance(str(value["run"]["run_id"]))
            )
        elif kind == "check":
            due = _parse(value)
            ctx.signal_entity(entity_id, TTL_CHECK, {"due": value}, signal_time=due)
        elif kind == "expire":
            ctx.schedule_new_orchestration(
                TTL_ORCHESTRATION, input=value, instance_id=ttl_instance(str(value["thread_id"]), str(value["due"]))
            )
