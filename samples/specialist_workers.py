"""Specialist workers: validation and shipping run in separate processes, each pulling only its own work.

Three worker processes serve one task hub: one runs the ``order_routing`` orchestration, one only the
``validate_order`` activity, one only ``ship_order`` at version 1. Each sends work-item filters built from
what it registered, so the backend routes each work item to a worker that can run it. While the shipping
specialist is down, shipping work waits (the order stays RUNNING); once it starts, the order completes.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from _support import Runtime, parse_args, spawn_worker_process, stop_worker_processes

from durabletask import client, task
from durabletask.worker import ActivityWorkItemFilter, WorkItemFilters


def validate_order(ctx: task.ActivityContext, order_id: str) -> str:
    return f"{order_id} valid (checked by pid {os.getpid()})"


def ship_order(ctx: task.ActivityContext, order_id: str) -> str:
    return f"{order_id} shipped (by pid {os.getpid()})"


def order_routing(ctx: task.OrchestrationContext, order_id: str) -> Any:
    validation = yield ctx.call_activity(validate_order, input=order_id)
    # Activities inherit the orchestration's version ("1"), which the shipping filter asks for.
    shipping = yield ctx.call_activity(ship_order, input=order_id)
    return [validation, shipping]


def run_role(rt: Runtime, role: str) -> None:
    with rt.worker() as w:
        if role == "orchestration":
            w.add_orchestrator(order_routing)
            w.use_work_item_filters()
        elif role == "validation":
            w.add_activity(validate_order)
            w.use_work_item_filters()
        else:
            w.add_activity(ship_order)
            w.use_work_item_filters(WorkItemFilters(activities=[ActivityWorkItemFilter("ship_order", ["1"])]))
        w.start()
        print(f"[{role}] worker ready (pid {os.getpid()})", flush=True)
        sys.stdin.read()  # run until the parent closes our stdin


def _pending_activities(c: client.TaskHubGrpcClient, instance_id: str) -> list[str]:
    history = c.get_orchestration_history(instance_id)
    scheduled = {e.event_id: e.name for e in history if type(e).__name__ == "TaskScheduledEvent"}
    for e in history:
        if type(e).__name__ in ("TaskCompletedEvent", "TaskFailedEvent"):
            scheduled.pop(e.task_scheduled_id, None)
    return sorted(scheduled.values())


def main() -> int:
    args = parse_args(__doc__ or "", lambda p: p.add_argument("--role"))
    if args.role:
        run_role(Runtime.from_args(args), args.role)
        return 0
    with Runtime.from_args(args) as rt:
        procs = [spawn_worker_process("specialist_workers.py", rt, "--role", role)
                 for role in ("orchestration", "validation")]
        try:
            c = rt.client()
            instance_id = c.schedule_new_orchestration(order_routing, input="order-42", version="1")
            deadline = time.monotonic() + 30
            while _pending_activities(c, instance_id) != ["ship_order"] and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1.0)
            state = c.get_orchestration_state(instance_id)
            assert state is not None
            print(f"shipping specialist down: {state.runtime_status.name}, waiting on "
                  f"{_pending_activities(c, instance_id)}")
            procs.append(spawn_worker_process("specialist_workers.py", rt, "--role", "shipping"))
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
            print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
            return 0 if state.runtime_status == client.OrchestrationStatus.COMPLETED else 1
        finally:
            stop_worker_processes(procs)


if __name__ == "__main__":
    raise SystemExit(main())
