"""The native versions of the recovery demonstrations: activities bounded by timeouts, heartbeating, cancellable."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from durabletask import task
from tests.support.reliability import Ledger

RETRY = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=200), max_number_of_attempts=3)


def bounded_write(ctx: task.OrchestrationContext, _: Any) -> Any:
    """A write whose answer may never come is bounded by ``start_to_close_timeout``, then reconciled by key."""
    key = f"{ctx.instance_id}/write"
    try:
        yield ctx.call_activity("hanging_write", input=key, start_to_close_timeout=timedelta(seconds=2))
        return "written"
    except task.ActivityTimeoutError as error:
        assert error.timeout_type == "start_to_close"
        if (yield ctx.call_activity("lookup", input=key)):
            return "reconciled"
        yield ctx.call_activity("write", input={"key": key, "mode": "ok"})
        return "rewritten"


def bounded_extraction(ctx: task.OrchestrationContext, plan: dict[str, Any]) -> Any:
    """A long extraction that heartbeats its page; a ``cancel`` event stops it and runs the compensation."""
    extract = ctx.call_activity(
        "extract_pages",
        input=plan,
        heartbeat_timeout=timedelta(seconds=plan.get("heartbeat_seconds", 2)),
        schedule_to_close_timeout=timedelta(minutes=5),
        cancellation=task.ActivityCancellation.TRY_CANCEL,
        retry_policy=RETRY,
    )
    cancel = ctx.wait_for_external_event("cancel")
    winner = yield task.when_any([extract, cancel])
    if winner is cancel:
        extract.cancel()
        yield ctx.call_activity("step", input=f"{ctx.instance_id}/compensate")
        return "cancelled"
    return (yield extract)


def watched_extraction(ctx: task.OrchestrationContext, plan: dict[str, Any]) -> Any:
    """An extraction with a heartbeat timeout, retried after failures; its output lists why each retry was made."""
    retried: list[list[Any]] = []

    def note(failure: task.FailureDetails) -> bool:  # rebuilt the same on every replay: a pure function of history
        retried.append([failure.error_type, (failure.properties or {}).get("timeoutType")])
        return True

    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=200), max_number_of_attempts=3,
                              handle_failure=note)
    result = yield ctx.call_activity("extract_pages", input=plan, retry_policy=policy,
                                     heartbeat_timeout=timedelta(seconds=plan["heartbeat_seconds"]))
    return {**result, "retried_after": retried}


class BoundedActivities:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def hanging_write(self, ctx: task.ActivityContext, key: str) -> str:
        self.ledger.apply(key, "written")
        deadline = time.monotonic() + 60
        while not ctx.is_cancellation_requested and time.monotonic() < deadline:
            time.sleep(0.05)  # the storage service never answers
        self.ledger.apply(f"{key}/stopped")
        return key

    def extract_pages(self, ctx: task.ActivityContext, plan: dict[str, Any]) -> dict[str, int]:
        iid = ctx.orchestration_id
        start = ctx.heartbeat_details or 0
        self.ledger.apply(f"{iid}/attempt-from-{start}")
        page = start
        try:
            while page < plan["pages"]:
                ctx.heartbeat(page)
                if page == plan.get("mark_at"):
                    self.ledger.apply(f"{iid}/reached-{page}")
                time.sleep(plan.get("page_seconds", 0.05))
                page += 1
        except task.ActivityCancelledError:
            self.ledger.apply(f"{iid}/stopped-at", str(page))
            raise
        return {"pages": page, "resumed_from": start}


ORCHESTRATORS = (bounded_write, bounded_extraction, watched_extraction)


def activities(ledger: Ledger) -> list[Any]:
    acts = BoundedActivities(ledger)
    return [acts.hanging_write, acts.extract_pages]
