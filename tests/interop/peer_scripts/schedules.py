"""Microsoft's scheduled tasks, driven from the command line by the cross-SDK schedule tests.

Usage:
  python schedules.py worker HOST:PORT            a worker with configure_scheduled_tasks(); runs until stdin closes
  python schedules.py client HOST:PORT OP ID [JSON] one client operation; prints one JSON line

OP is create (JSON: interval seconds, start_offset seconds from now, late, input), describe, pause, resume,
delete or list (ID is the prefix).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask import client, task, worker
from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient, ScheduleQuery


def report(ctx: task.OrchestrationContext, payload: Any) -> Any:
    return payload


def described(d: Any) -> dict[str, Any]:
    return {
        "schedule_id": d.schedule_id,
        "orchestration_name": d.orchestration_name,
        "orchestration_input": d.orchestration_input,
        "interval": d.interval.total_seconds() if d.interval else None,
        "status": d.status.value,
        "last_run_at": d.last_run_at.isoformat() if d.last_run_at else None,
        "next_run_at": d.next_run_at.isoformat() if d.next_run_at else None,
        "execution_token": d.execution_token,
    }


def run_worker(address: str) -> None:
    w = worker.TaskHubGrpcWorker(host_address=address)
    w.add_orchestrator(report)
    w.configure_scheduled_tasks()
    w.start()
    print("ready", flush=True)
    sys.stdin.read()
    w.stop()


def run_client(address: str, op: str, schedule_id: str, args: dict[str, Any]) -> Any:
    c = client.TaskHubGrpcClient(host_address=address)
    schedules = ScheduledTaskClient(c, operation_timeout=30)
    handle = schedules.get_schedule_client(schedule_id)
    if op == "create":
        start = datetime.now(timezone.utc) + timedelta(seconds=args["start_offset"]) if "start_offset" in args else None
        schedules.create_schedule(
            ScheduleCreationOptions(
                schedule_id,
                "report",
                timedelta(seconds=args["interval"]),
                orchestration_input=args.get("input"),
                start_at=start,
                start_immediately_if_late=args.get("late", False),
            )
        )
        return None
    if op == "describe":
        return described(handle.describe())
    if op == "list":
        return sorted(d.schedule_id for d in schedules.list_schedules(ScheduleQuery(schedule_id_prefix=schedule_id)))
    getattr(handle, op)()
    return None


def main() -> None:
    kind, address = sys.argv[1], sys.argv[2]
    if kind == "worker":
        run_worker(address)
        return
    op, schedule_id = sys.argv[3], sys.argv[4]
    args = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    try:
        result = run_client(address, op, schedule_id, args)
    except Exception as error:  # the test compares the error Microsoft's client raises
        print(json.dumps({"ok": False, "error_type": type(error).__name__, "message": str(error)}))
        return
    print(json.dumps({"ok": True, "result": result}))


if __name__ == "__main__":
    main()
