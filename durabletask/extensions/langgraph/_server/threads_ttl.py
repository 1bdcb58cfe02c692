"""Thread TTLs: the ``ttl`` a thread is created or updated with, and what happens when it runs out.

A thread's TTL counts from the last write to the thread: its creation, an update, a run made on it and each status
its runs reach. The record entity keeps one delayed signal to itself pending for it (see ``_records_effects``);
when the signal finds the thread expired and idle, it starts ``lgs.thread_ttl``, whose activity deletes the thread
(``delete``) or keeps only its latest checkpoint (``keep_latest``) through the thread service, as ``DELETE
/threads/{id}`` and ``POST /threads/prune`` do. A busy thread is left alone: its run's end writes to it, and so
starts its TTL again.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from durabletask import task
from durabletask.extensions.langgraph._records import record_id
from durabletask.extensions.langgraph._records_effects import EXPIRE_END, TTL_ORCHESTRATION
from durabletask.extensions.langgraph._server.config import ServerSettings
from durabletask.extensions.langgraph._server.config_ttl import MAX_TTL_MINUTES, STRATEGIES
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import bad_request
from durabletask.extensions.langgraph._server.threads_records import active_runs
from durabletask.extensions.langgraph._server.threads_service import ThreadServiceImpl

TTL_EXPIRE = "lgs.thread_expire"
"""The activity that expires one thread."""
_RETRY = task.RetryPolicy(
    first_retry_interval=datetime.timedelta(seconds=1),
    max_number_of_attempts=5,
    backoff_coefficient=2.0,
    max_retry_interval=datetime.timedelta(minutes=1),
)


def parse_ttl(body: dict[str, Any]) -> dict[str, Any] | None:
    """The body's ``ttl`` as the record keeps it (``{"strategy", "ttl_minutes"}``); 422 naming what is wrong.

    LangGraph's SDK sends a number of minutes as ``{"ttl": minutes, "strategy": "delete"}``; a bare number is taken
    the same way.
    """
    ttl = body.get("ttl")
    if ttl is None:
        return None
    if isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
        ttl = {"ttl": ttl}
    if not isinstance(ttl, dict):
        raise bad_request(f"'ttl' must be a number of minutes or an object, not {type(ttl).__name__}")
    unknown = sorted(set(ttl) - {"ttl", "strategy"})
    if unknown:
        raise bad_request(f"'ttl.{unknown[0]}' is not a field of a thread's TTL (ttl, strategy)")
    minutes = ttl.get("ttl")
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise bad_request("'ttl.ttl' is required: the time to live in minutes, a number")
    if not math.isfinite(minutes) or minutes <= 0 or minutes > MAX_TTL_MINUTES:
        raise bad_request(
            f"'ttl.ttl' must be more than 0 and at most {MAX_TTL_MINUTES} minutes (ten years), not {minutes}"
        )
    strategy = ttl.get("strategy", "delete")
    if strategy not in STRATEGIES:
        raise bad_request(f"'ttl.strategy' must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    return {"strategy": strategy, "ttl_minutes": minutes}


def ttl_json(record: dict[str, Any]) -> dict[str, Any] | None:
    """The thread's ``ttl`` as ``GET /threads/{id}?include=ttl`` shows it (``None``: the thread has none)."""
    ttl = record.get("ttl")
    if not isinstance(ttl, dict) or ttl.get("ttl_minutes") is None:
        return None
    return {
        "strategy": ttl.get("strategy", "delete"),
        "ttl_minutes": ttl["ttl_minutes"],
        "expires_at": ttl.get("expires_at"),
    }


def thread_expiry(ctx: task.OrchestrationContext, value: Any) -> Generator[task.Task[Any], Any, Any]:
    """``lgs.thread_ttl``: one thread expired (its activity retried while the hub cannot be reached); then the record
    admits runs again, whatever came of it (a deleted thread has no record left to write to)."""
    try:
        result = yield ctx.call_activity(TTL_EXPIRE, input=value, retry_policy=_RETRY)
    except task.TaskFailedError as failed:
        result = {"expired": False, "why": f"the expiry failed: {failed}"}
    ctx.signal_entity(record_id(str(value["thread_id"])), EXPIRE_END, {"due": value.get("due")})
    return result


def expire_activity(
    project: Any, connect: Callable[[], Any]
) -> Callable[[task.ActivityContext, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """The ``lgs.thread_expire`` activity of a worker serving ``project``, reaching the hub with ``connect()``."""

    async def expire(ctx: task.ActivityContext, value: dict[str, Any]) -> dict[str, Any]:
        client = connect()
        try:
            server = ServerContext(client=client, graphs=project.graphs, settings=ServerSettings(project=project))
            threads = ThreadServiceImpl(server)
            thread_id = str(value["thread_id"])
            record = await threads.records.read(thread_id)
            if record is None:
                return {"expired": False, "why": "the thread is gone"}
            found = record.get("ttl") or {}
            # A record marks the thread when it decides (and refuses runs from then on); an expiry its record decided
            # before records marked threads finds no mark, and goes on as it did then.
            if "expiring" in record and record["expiring"] != value.get("due"):
                return {"expired": False, "why": "the record did not mark the thread as expiring at this time"}
            if found.get("expires_at") != value.get("due"):
                return {"expired": False, "why": "the thread was written to since: its TTL started again"}
            if active_runs(record):
                return {"expired": False, "why": "the thread is busy"}
            if found.get("strategy") == "keep_latest":
                await threads.keep_latest(thread_id)
                return {"expired": True, "strategy": "keep_latest"}
            await threads.delete(thread_id)
            return {"expired": True, "strategy": "delete"}
        finally:
            await client.close()

    return expire


def register_expiry(worker: Any, project: Any, connect: Callable[[], Any]) -> None:
    """The expiry orchestration and its activity, on a worker (before it starts)."""
    worker.add_orchestrator(thread_expiry, name=TTL_ORCHESTRATION)
    worker.add_activity(expire_activity(project, connect), name=TTL_EXPIRE)
