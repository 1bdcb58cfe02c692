"""A thread's record beside its orchestration: metadata, runs and their statuses, the latest values (an entity).

LangGraph's server keeps, per thread, what the graph's checkpoints do not: when it was made, its metadata, which
graph runs it, and each run with its status. Here that record is the entity ``lg.thread@{key}``. The server writes
the parts a client sets (metadata, a new run); the thread's orchestration writes every status a run goes through
(``running``, ``success``, ``error``, ``interrupted``) and the thread's values after each run, so the record is
right whichever server, if any, is alive.

Every write names an operation ID; the entity keeps the last IDs it applied, so a writer can wait until its own
write is in (read-your-writes over one-way signals).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask.entities import EntityInstanceId
from durabletask.extensions.langgraph._records_effects import (
    EXPIRE_END,
    TTL_CHECK,
    effects,
    expire_end,
    perform,
    ttl_check,
)

#: The entity that holds threads' records.
RECORD_ENTITY = "lg.thread"
#: Operation IDs kept per record, newest last.
KEEP_OPS = 64
#: Runs kept per record: the oldest that have ended are forgotten first (a record stays far below 1 MB).
KEEP_RUNS = 200
#: Runs deleted or forgotten that a record still names (with their last status), newest last: a thread's stream
#: keeps their events, so its protocol events keep their numbers across a deletion.
KEEP_GONE = 500
_ENDED = ("success", "error", "interrupted", "timeout")
_ACTIVE = ("pending", "running")
#: The largest values (and interrupts) a record keeps, as serialized text: larger ones are read from the thread's
#: state instead, so a record and the signal that writes it stay far below DTS's payload limits.
MAX_RECORD_VALUES = 128 * 1024
_MAX_PLAIN_KEY = 80


def record_key(thread_id: str) -> str:
    """The entity key of a thread's record: the thread ID itself when short printable ASCII without ``@`` or ``~``,
    else a readable prefix and ``~`` and the first 32 hex digits of the SHA-256 of the whole ID."""
    plain = all(" " <= ch <= "~" for ch in thread_id) and "@" not in thread_id and "~" not in thread_id
    if plain and 0 < len(thread_id) <= _MAX_PLAIN_KEY:
        return thread_id
    prefix = "".join(ch for ch in thread_id[:32] if " " <= ch <= "~" and ch not in "@~")
    return f"{prefix}~{hashlib.sha256(thread_id.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def values_fields(values: dict[str, str], interrupts: dict[str, str]) -> dict[str, Any]:
    """The record's ``values`` and ``interrupts`` (serialized), or ``values_elsewhere`` when they are too large."""
    if len(values.get("b", "")) + len(interrupts.get("b", "")) > MAX_RECORD_VALUES:
        return {"values": None, "interrupts": None, "values_elsewhere": True}
    return {"values": values, "interrupts": interrupts, "values_elsewhere": False}


def record_id(thread_id: str) -> EntityInstanceId:
    """The entity instance that holds the record of ``thread_id``."""
    return EntityInstanceId(RECORD_ENTITY, record_key(thread_id))


def _note_op(state: dict[str, Any], op: Any) -> None:
    if op:
        state["ops"] = [*state.get("ops", []), op][-KEEP_OPS:]


def _bury(state: dict[str, Any], run_id: str, run: dict[str, Any]) -> None:
    """Remember that ``run_id`` was a run of the thread, with its last status, once its record is gone."""
    gone = {k: v for k, v in (state.get("gone") or {}).items() if k != run_id}
    gone[run_id] = run.get("status")
    state["gone"] = dict(list(gone.items())[-KEEP_GONE:])


def _trim_runs(state: dict[str, Any], runs: dict[str, Any]) -> None:
    while len(runs) > KEEP_RUNS:
        ended = [rid for rid, run in runs.items() if run.get("status") in _ENDED]
        run_id = ended[0] if ended else next(iter(runs))
        _bury(state, run_id, runs.pop(run_id))


def in_flight(state: dict[str, Any]) -> list[str]:
    """The IDs of the thread's runs that are pending or running, oldest first."""
    runs = [r for r in (state.get("runs") or {}).values() if r.get("status") in _ACTIVE]
    return [str(r["run_id"]) for r in sorted(runs, key=lambda r: str(r.get("created_at")))]


#: The error a run lost between its record and its thread's orchestration ends with.
LOST_ERROR = "RunLostError: the server that created the run stopped before handing it to the thread's orchestration"


def _moment(value: Any) -> datetime | None:
    try:
        found = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=timezone.utc)


def lost_runs(state: dict[str, Any], at: Any, lost_after: Any) -> list[str]:
    """The IDs of the thread's runs recorded ``pending`` but never handed to its orchestration (``submitted`` still
    false) for ``lost_after`` seconds at ``at``: their server stopped between the two steps, and nothing runs them."""
    now = _moment(at)
    if now is None or not isinstance(lost_after, (int, float)):
        return []
    found = []
    for run_id, run in (state.get("runs") or {}).items():
        created = _moment(run.get("created_at"))
        waiting = run.get("status") == "pending" and run.get("submitted") is False
        if waiting and created is not None and created + timedelta(seconds=float(lost_after)) <= now:
            found.append(str(run_id))
    return found


def _end_lost(state: dict[str, Any], data: dict[str, Any]) -> None:
    """Record the lost runs (see :func:`lost_runs`) as ``error``, naming the run whose admission found them."""
    lost = lost_runs(state, data.get("at"), data.get("lost_after"))
    if not lost:
        return
    runs = dict(state.get("runs") or {})
    by = str(data.get("by") or (data.get("run") or {}).get("run_id"))
    for run_id in lost:
        ended = {"status": "error", "error": LOST_ERROR, "updated_at": data["at"], "lost_to": by}
        runs[run_id] = {**runs[run_id], **ended}
    state["runs"] = runs


def _admission(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """A new run's admission under its ``multitask_strategy`` (``admit``), decided here, where a thread's writes are
    applied one at a time: ``None`` refuses it (``reject`` while a run is in flight); otherwise the fields the run is
    recorded with (``supersedes``: the runs in flight that ``interrupt`` or ``rollback`` cancel)."""
    run = data.get("run") or {}
    strategy = data.get("admit")
    if strategy is None or str(run.get("run_id")) in (state.get("runs") or {}):
        return {}
    ahead = in_flight(state)
    if strategy == "reject" and ahead:
        return None
    return {"supersedes": ahead} if strategy in ("interrupt", "rollback") and ahead else {}


def _merge_run(state: dict[str, Any], runs: dict[str, Any], update: dict[str, Any]) -> None:
    """A run's fields in; a status that has ended is never taken back to ``pending`` or ``running``."""
    run_id = str(update["run_id"])
    current = runs.get(run_id, {})
    if current.get("status") in _ENDED and update.get("status") not in (None, *_ENDED):
        update = {k: v for k, v in update.items() if k != "status"}
    runs[run_id] = {**current, **update}
    _trim_runs(state, runs)


def _put(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """A new thread (or a copy): the whole record."""
    return {**data["record"], "runs": dict(data["record"].get("runs") or {})}


def _patch(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    if not state:
        return None  # a patch never makes a thread
    state["metadata"] = {**(state.get("metadata") or {}), **(data.get("metadata") or {})}
    for key in ("updated_at", "graph_id", "ttl"):
        if data.get(key) is not None:
            state[key] = data[key]
    return state


def _run(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """A run's record or any of its fields, and the thread's fields the orchestration reports with it."""
    if not state:
        return None  # the thread was deleted: a late report of its orchestration makes no record
    runs = dict(state.get("runs") or {})
    if data.get("run"):
        _merge_run(state, runs, {**data["run"], **(_admission(state, data) or {})})
    state["runs"] = runs
    state.update(data.get("thread") or {})
    if data.get("metadata"):
        state["metadata"] = {**(state.get("metadata") or {}), **data["metadata"]}
    if data.get("at"):
        state["updated_at"] = data["at"]
    return state


def _cursor(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """Where the thread's stream had got to when a run ended: later runs read from there."""
    if not state:
        return None  # the thread was deleted meanwhile: no record is made for it
    if str(data["cursor"]) > str(state.get("stream_cursor") or ""):
        state["stream_cursor"] = str(data["cursor"])
    return state


def _submitted(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """The server handed the run to the thread's orchestration: it can no longer be lost (see :func:`lost_runs`)."""
    if not state:
        return None
    run = (state.get("runs") or {}).get(str(data["run_id"]))
    if run is not None:
        state["runs"] = {**state["runs"], str(data["run_id"]): {**run, "submitted": True}}
    return state


def _lost(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """A reader found runs lost (see :func:`lost_runs`) with no admission to end them: they end now."""
    if not state:
        return None
    _end_lost(state, data)
    return state


def _forget_run(state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
    if not state:
        return None
    runs = dict(state.get("runs") or {})
    run_id = str(data["run_id"])
    if run_id in runs:
        _bury(state, run_id, runs.pop(run_id))
    state["runs"] = runs
    return state


_OPERATIONS = {
    "put": _put,
    "patch": _patch,
    "run": _run,
    "cursor": _cursor,
    "forget_run": _forget_run,
    "submitted": _submitted,
    "lost": _lost,
    TTL_CHECK: ttl_check,
    EXPIRE_END: expire_end,
}


def apply(state: dict[str, Any] | None, operation: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """The record after ``operation`` (``None``: deleted). Pure, so it is tested without a worker."""
    if operation == "delete":
        return None
    handler = _OPERATIONS.get(operation)
    if handler is None:
        raise ValueError(f"unknown operation '{operation}' on a thread record")
    before = dict(state or {})
    exists = before.get("thread_id") is not None
    admitting = operation == "run" and data.get("admit") is not None
    if admitting and exists:
        _end_lost(before, data)
    # Refused, and its writer reads 409: a new thread whose ID is taken, a run that its strategy keeps out, and a new
    # run on a thread that is expiring (its writer then finds the thread gone, or kept, and writes again).
    if (operation == "put" and exists) or (
        admitting and exists and (before.get("expiring") or _admission(before, data) is None)
    ):
        if data.get("op"):
            before["refused"] = [*before.get("refused", []), data["op"]][-KEEP_OPS:]
        return before
    after = handler(before, data)
    if after is not None:
        _note_op(after, data.get("op"))
    return after


def thread_record(ctx: Any, data: Any) -> None:
    """The entity function of a thread's record (see :func:`apply`), and what its change starts (a run's webhook, the
    thread's TTL timer: see ``_records_effects``)."""
    before = ctx.get_state(dict)
    after = apply(before, ctx.operation, data or {})
    found = effects(before, after, ctx.operation, data or {})
    ctx.set_state(after)
    perform(ctx, ctx.entity_id, found)


def register_records(worker: Any) -> None:
    """Register the record entity on ``worker`` (once: a second call keeps the first)."""
    try:
        worker.add_entity(thread_record, name=RECORD_ENTITY)
    except ValueError:
        return
