"""Rewind after a repaired failure: extract → transform → load, where load fails until its cause is fixed.

The first run fails in ``load`` (the warehouse is misconfigured). We fix the configuration and rewind the
instance: replay reuses the recorded results of ``extract`` and ``transform`` (they do not run again, as the
counters show), only ``load`` runs again, and the instance completes. The history keeps the rewind for audit.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task

RUNS: Counter[str] = Counter()
WAREHOUSE = {"url": "postgres://wrong-host/warehouse"}


def extract(ctx: task.ActivityContext, source: str) -> list[dict[str, Any]]:
    RUNS["extract"] += 1
    return [{"sku": "A", "qty": 3, "price": 2.5}, {"sku": "B", "qty": 1, "price": 10.0}]


def transform(ctx: task.ActivityContext, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    RUNS["transform"] += 1
    return [{"sku": r["sku"], "revenue": r["qty"] * r["price"]} for r in rows]


def load(ctx: task.ActivityContext, rows: list[dict[str, Any]]) -> str:
    RUNS["load"] += 1
    if "wrong-host" in WAREHOUSE["url"]:
        raise ConnectionError(f"cannot reach {WAREHOUSE['url']}")
    return f"loaded {len(rows)} rows into {WAREHOUSE['url']}"


def etl(ctx: task.OrchestrationContext, source: str) -> Any:
    rows = yield ctx.call_activity(extract, input=source)
    clean = yield ctx.call_activity(transform, input=rows)
    return (yield ctx.call_activity(load, input=clean))


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(etl)
        for fn in (extract, transform, load):
            w.add_activity(fn)
        w.start()
        c = rt.client()
        instance_id = c.schedule_new_orchestration(etl, input="sales.csv")
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        assert state is not None and state.failure_details is not None
        print(f"first run: {state.runtime_status.name}: {state.failure_details.message}")
        print(f"  runs so far: {dict(sorted(RUNS.items()))}")

        WAREHOUSE["url"] = "postgres://warehouse-host/warehouse"  # the operator repairs the cause
        c.rewind_orchestration(instance_id, reason="warehouse URL fixed")
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        assert state is not None
        print(f"after rewind: {state.runtime_status.name}: {state.serialized_output}")
        print(f"  runs in total: {dict(sorted(RUNS.items()))} (extract and transform ran once)")
        rewinds = [e for e in c.get_orchestration_history(instance_id) if type(e).__name__ == "ExecutionRewoundEvent"]
        print(f"  history keeps {len(rewinds)} rewind event(s): reason={rewinds[0].reason!r}" if rewinds else "")
        ok = state.runtime_status == client.OrchestrationStatus.COMPLETED
        return 0 if ok and RUNS["extract"] == 1 and RUNS["transform"] == 1 and RUNS["load"] == 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
