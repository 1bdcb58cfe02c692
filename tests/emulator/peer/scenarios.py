"""Conformance scenarios run by Microsoft's official SDK (in its own venv) against an emulator address.

Usage: python scenarios.py HOST:PORT SCENARIO [SCENARIO ...]; prints one JSON line per scenario.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from datetime import timedelta

from durabletask import client, task, worker


def hello(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello {name}!"


def double(ctx: task.ActivityContext, n: int) -> int:
    return n * 2


def fail(ctx: task.ActivityContext, _: object) -> None:
    raise ValueError("boom")


def chaining(ctx: task.OrchestrationContext, _: object):
    a = yield ctx.call_activity(hello, input="Tokyo")
    b = yield ctx.call_activity(hello, input="Seattle")
    c = yield ctx.call_activity(hello, input="London")
    return [a, b, c]


def fan_out(ctx: task.OrchestrationContext, count: int):
    results = yield task.when_all([ctx.call_activity(double, input=i) for i in range(count)])
    return sum(results)


def timer(ctx: task.OrchestrationContext, seconds: float):
    yield ctx.create_timer(timedelta(seconds=seconds))
    return "fired"


def approval(ctx: task.OrchestrationContext, _: object):
    value = yield ctx.wait_for_external_event("approve")
    return f"approved:{value}"


def child(ctx: task.OrchestrationContext, n: int):
    value = yield ctx.call_activity(double, input=n)
    return value + 1


def parent(ctx: task.OrchestrationContext, n: int):
    results = yield task.when_all([ctx.call_sub_orchestrator(child, input=i) for i in range(n)])
    return results


def counter(ctx: task.OrchestrationContext, n: int):
    if n < 3:
        yield ctx.call_activity(double, input=n)
        ctx.continue_as_new(n + 1)
        return None
    return n


def failing(ctx: task.OrchestrationContext, _: object):
    yield ctx.call_activity(fail, input=None)
    return "unreachable"


def forever(ctx: task.OrchestrationContext, _: object):
    yield ctx.wait_for_external_event("never")
    return "done"


def run(c: client.TaskHubGrpcClient, scenario: str) -> dict[str, object]:
    iid = f"{scenario}-{uuid.uuid4().hex[:8]}"
    C = client.OrchestrationStatus

    def start(fn, inp=None):  # type: ignore[no-untyped-def]
        return c.schedule_new_orchestration(fn, input=inp, instance_id=iid)

    def finish(timeout: int = 30) -> client.OrchestrationState:
        state = c.wait_for_orchestration_completion(iid, timeout=timeout)
        assert state is not None
        return state

    if scenario == "chaining":
        start(chaining)
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "fanout":
        start(fan_out, 20)
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "timer":
        start(timer, 1.0)
        t0 = time.time()
        s = finish()
        return {
            "status": s.runtime_status.name,
            "output": json.loads(s.serialized_output or "null"),
            "elapsed": time.time() - t0,
        }
    if scenario == "event":
        start(approval)
        c.wait_for_orchestration_start(iid, timeout=30)
        c.raise_orchestration_event(iid, "approve", data="yes")
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "suborch":
        start(parent, 3)
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "continue_as_new":
        start(counter, 0)
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "failure":
        start(failing)
        s = finish()
        fd = s.failure_details
        return {"status": s.runtime_status.name, "message": fd.message if fd else None}
    if scenario == "terminate":
        start(forever)
        c.wait_for_orchestration_start(iid, timeout=30)
        c.terminate_orchestration(iid, output="stopped")
        s = finish()
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}
    if scenario == "suspend":
        start(approval)
        c.wait_for_orchestration_start(iid, timeout=30)
        c.suspend_orchestration(iid)
        deadline = time.time() + 20
        while c.get_orchestration_state(iid).runtime_status != C.SUSPENDED and time.time() < deadline:
            time.sleep(0.05)
        suspended = c.get_orchestration_state(iid).runtime_status.name
        c.raise_orchestration_event(iid, "approve", data="later")
        time.sleep(0.3)
        still = c.get_orchestration_state(iid).runtime_status.name
        c.resume_orchestration(iid)
        s = finish()
        return {
            "suspended": suspended,
            "while_suspended": still,
            "status": s.runtime_status.name,
            "output": json.loads(s.serialized_output or "null"),
        }
    if scenario == "purge_query":
        start(chaining)
        finish()
        found = [st.instance_id for st in c.get_all_orchestration_states()]
        purged = c.purge_orchestration(iid)
        after = c.get_orchestration_state(iid)
        return {"found": iid in found, "deleted": purged.deleted_instance_count, "after": after is None}
    raise SystemExit(f"unknown scenario {scenario}")


def main() -> None:
    address, scenarios = sys.argv[1], sys.argv[2:]
    w = worker.TaskHubGrpcWorker(host_address=address)
    for fn in (chaining, fan_out, timer, approval, child, parent, counter, failing, forever):
        w.add_orchestrator(fn)
    for fn in (hello, double, fail):
        w.add_activity(fn)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        for name in scenarios:
            print(json.dumps({"scenario": name, **run(c, name)}), flush=True)
    finally:
        w.stop()


if __name__ == "__main__":
    main()
