"""A long document extraction that heartbeats its page, resumes where it stopped, and can be cancelled.

Two documents are extracted. The first attempt of the first one fails half-way (a flaky page reader); the retry
starts from the page of its last heartbeat rather than from page 0. The second is cancelled by its user while it
runs: the orchestration gives up at once (TRY_CANCEL) and the activity sees the cancellation at its next heartbeat,
then stops.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from _support import Runtime, parse_args, wait_for_custom_status

from durabletask import client, task

PAGE_SECONDS = 0.02
_failed_once: set[str] = set()


def extract(ctx: task.ActivityContext, doc: dict[str, Any]) -> dict[str, Any]:
    start = ctx.heartbeat_details or 0  # the page the previous attempt's last heartbeat reported
    page = start
    try:
        while page < doc["pages"]:
            ctx.heartbeat(page)  # throttled; raises ActivityCancelledError once cancellation was requested
            if doc.get("flaky_at") == page and doc["name"] not in _failed_once:
                _failed_once.add(doc["name"])
                raise OSError(f"page reader failed on page {page}")
            time.sleep(PAGE_SECONDS)
            page += 1
    except task.ActivityCancelledError:
        print(f"  [extract] {doc['name']}: cancellation seen at page {page}, stopping")
        raise
    print(f"  [extract] {doc['name']}: pages {start}..{page - 1} extracted by this attempt")
    return {"pages": page, "resumed_from": start}


def pipeline(ctx: task.OrchestrationContext, doc: dict[str, Any]) -> Any:
    t = ctx.call_activity(
        extract,
        input=doc,
        start_to_close_timeout=timedelta(minutes=5),
        schedule_to_close_timeout=timedelta(hours=1),
        heartbeat_timeout=timedelta(seconds=1),
        cancellation=task.ActivityCancellation.TRY_CANCEL,
        retry_policy=task.RetryPolicy(first_retry_interval=timedelta(milliseconds=200), max_number_of_attempts=3),
    )
    ctx.set_custom_status("extracting")
    winner = yield task.when_any([t, ctx.wait_for_external_event("cancel")])
    if winner is not t:
        t.cancel()
    try:
        return (yield t)
    except task.TaskCancelledError:
        return "cancelled by the user"
    except task.ActivityTimeoutError as error:
        return {"timed_out": error.timeout_type, "last_page": error.last_heartbeat_details}


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(pipeline)
        w.add_activity(extract)
        w.start()
        c = rt.client()
        flaky = c.schedule_new_orchestration(
            pipeline, input={"name": "annual-report", "pages": 120, "flaky_at": 90}, instance_id="extract-flaky"
        )
        long = c.schedule_new_orchestration(
            pipeline, input={"name": "archive", "pages": 100_000}, instance_id="extract-cancelled"
        )
        wait_for_custom_status(c, long, "extracting")
        time.sleep(1.5)  # let the archive extraction run for a while before its user cancels it
        c.raise_orchestration_event(long, "cancel")
        ok = True
        for instance_id in (flaky, long):
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
            print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
            ok = ok and state.runtime_status == client.OrchestrationStatus.COMPLETED
        final = c.wait_for_orchestration_completion(flaky, timeout=60)
        resumed = final is not None and '"resumed_from": 0' not in (final.serialized_output or "")
        print("the retry resumed from its last heartbeat" if resumed else "the retry started again from page 0")
        return 0 if ok and resumed else 1


if __name__ == "__main__":
    raise SystemExit(main())
