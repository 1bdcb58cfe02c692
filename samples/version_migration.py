"""Version migration: v2 is deployed while v1 instances run; one v1 instance moves to v2 by continue-as-new.

Two worker processes serve the same orchestration name, ``batch_loop``: one runs the v1 code and accepts only
version 1 work, the other runs v2 and accepts only version 2 (work-item filters plus a strict version check).

* ``batch-a`` starts on v1 and finishes on v1.
* ``batch-b`` starts on v1, counts its records, then continues as new with ``new_version="2"`` and an input in
  v2's shape: same instance ID, new execution, now served by the v2 worker, which reuses the carried count.
* ``batch-c`` starts directly on v2.
None of them fails, and no instance is ever run by code of the wrong version.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from _support import Runtime, parse_args, spawn_worker_process, stop_worker_processes

from durabletask import client, task
from durabletask.worker import (
    ActivityWorkItemFilter,
    OrchestrationWorkItemFilter,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
    WorkItemFilters,
)

RECORDS = {"snapshot-a": 120, "snapshot-b": 250, "snapshot-c": 75}


def count_records(ctx: task.ActivityContext, snapshot: str) -> int:
    return RECORDS[snapshot]


def batch_loop_v1(ctx: task.OrchestrationContext, batch: dict[str, Any]) -> Any:
    if batch.get("migration_requested"):
        raise RuntimeError("a v2 payload came back to v1: check version routing")
    count = yield ctx.call_activity(count_records, input=batch["snapshot"])
    if batch.get("migrate"):
        ctx.continue_as_new({"snapshot": batch["snapshot"], "carried_count": count,
                             "count_contract": "record-count/v1", "migration_requested": True},
                            save_events=True, new_version="2")
        return None
    return {"count": count, "served_by": f"v1 (pid {os.getpid()})"}


def batch_loop_v2(ctx: task.OrchestrationContext, batch: dict[str, Any]) -> Any:
    carried = batch.get("carried_count")
    if isinstance(carried, int) and carried >= 0 and batch.get("count_contract") == "record-count/v1":
        count = carried
    else:
        count = yield ctx.call_activity(count_records, input=batch["snapshot"])
    return {"count": count, "served_by": f"v2 (pid {os.getpid()})", "migrated": bool(carried is not None)}


def run_version(rt: Runtime, version: str) -> None:
    with rt.worker() as w:
        w.add_orchestrator(batch_loop_v1 if version == "1" else batch_loop_v2, name="batch_loop")
        w.add_activity(count_records)
        w.use_versioning(VersioningOptions(version=version, default_version=version,
                                           match_strategy=VersionMatchStrategy.STRICT,
                                           failure_strategy=VersionFailureStrategy.REJECT))
        # Activities inherit the orchestration's version, so each worker also serves only its own activities.
        w.use_work_item_filters(WorkItemFilters(
            orchestrations=[OrchestrationWorkItemFilter("batch_loop", [version])],
            activities=[ActivityWorkItemFilter("count_records", [version])]))
        w.start()
        print(f"[v{version}] worker ready (pid {os.getpid()})", flush=True)
        sys.stdin.read()


def main() -> int:
    args = parse_args(__doc__ or "", lambda p: p.add_argument("--serve-version"))
    if args.serve_version:
        run_version(Runtime.from_args(args), args.serve_version)
        return 0
    with Runtime.from_args(args) as rt:
        procs = [spawn_worker_process("version_migration.py", rt, "--serve-version", v) for v in ("1", "2")]
        try:
            c = rt.client()
            c.schedule_new_orchestration("batch_loop", input={"snapshot": "snapshot-a"}, instance_id="batch-a",
                                         version="1")
            c.schedule_new_orchestration("batch_loop", input={"snapshot": "snapshot-b", "migrate": True},
                                         instance_id="batch-b", version="1")
            c.schedule_new_orchestration("batch_loop", input={"snapshot": "snapshot-c"}, instance_id="batch-c",
                                         version="2")
            ok = True
            for iid in ("batch-a", "batch-b", "batch-c"):
                state = c.wait_for_orchestration_completion(iid, timeout=60)
                assert state is not None
                print(f"{iid}: {state.runtime_status.name} {state.serialized_output}")
                ok = ok and state.runtime_status == client.OrchestrationStatus.COMPLETED
            return 0 if ok else 1
        finally:
            stop_worker_processes(procs)


if __name__ == "__main__":
    raise SystemExit(main())
