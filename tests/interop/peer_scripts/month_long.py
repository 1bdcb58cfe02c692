"""Run by Microsoft's SDK in the peer interpreter: its worker and client run a month-long orchestration (a 30-day
timer, then an activity retried with a 1-hour first interval) on a time-skipping emulator.

Usage: month_long.py ADDRESS ; prints one JSON line with the orchestration's output and status.
"""

import json
import sys
from datetime import timedelta

from durabletask import client, task, worker

attempts = {"count": 0}


def charge(ctx: task.ActivityContext, _: object) -> str:
    attempts["count"] += 1
    if attempts["count"] < 3:
        raise RuntimeError(f"card declined (attempt {attempts['count']})")
    return f"charged after {attempts['count']} attempts"


def monthly_invoice(ctx: task.OrchestrationContext, _: object) -> object:
    started = ctx.current_utc_datetime
    yield ctx.create_timer(timedelta(days=30))
    after_month = ctx.current_utc_datetime
    policy = task.RetryPolicy(first_retry_interval=timedelta(hours=1), max_number_of_attempts=5, backoff_coefficient=2)
    result = yield ctx.call_activity(charge, retry_policy=policy)
    return {"result": result, "times": [t.isoformat() for t in (started, after_month, ctx.current_utc_datetime)]}


def main() -> None:
    address = sys.argv[1]
    w = worker.TaskHubGrpcWorker(host_address=address)
    w.add_orchestrator(monthly_invoice)
    w.add_activity(charge)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        iid = c.schedule_new_orchestration(monthly_invoice)
        state = c.wait_for_orchestration_completion(iid, timeout=60)
    finally:
        w.stop()
    print(json.dumps({"status": state.runtime_status.name, "output": json.loads(state.serialized_output or "null")}))


if __name__ == "__main__":
    main()
