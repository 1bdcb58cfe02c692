"""Conformance scenarios run by Microsoft's official SDK (in its own venv) against an emulator address.

Usage: python scenarios.py HOST:PORT SCENARIO [SCENARIO ...]; prints one JSON line per scenario.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from datetime import timedelta

from durabletask import client, entities, task, worker


def hello(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello {name}!"


def double(ctx: task.ActivityContext, n: int) -> int:
    return n * 2


def fail(ctx: task.ActivityContext, _: object) -> None:
    raise ValueError("boom")


FLAKY_CALLS: list[int] = []


def flaky(ctx: task.ActivityContext, n: int) -> int:
    FLAKY_CALLS.append(n)
    if len(FLAKY_CALLS) == 1:
        raise RuntimeError("first call fails")
    return n + 1


def rewindable(ctx: task.OrchestrationContext, n: int):
    first = yield ctx.call_activity(double, input=n)
    second = yield ctx.call_activity(flaky, input=first)
    return second


def tally(ctx: entities.EntityContext, value: int | None) -> int:
    state = ctx.get_state(int, 0)
    if ctx.operation == "add":
        state += value or 0
        ctx.set_state(state)
    return state


def entity_caller(ctx: task.OrchestrationContext, key: str):
    target = entities.EntityInstanceId("tally", key)
    yield ctx.call_entity(target, "add", 3)
    value = yield ctx.call_entity(target, "get")
    return value


def entity_locker(ctx: task.OrchestrationContext, key: str):
    first, second = entities.EntityInstanceId("tally", key + "a"), entities.EntityInstanceId("tally", key + "b")
    with (yield ctx.lock_entities([first, second])):
        x = yield ctx.call_entity(first, "add", 1)
        y = yield ctx.call_entity(second, "add", 2)
    return [x, y]


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


def huge(ctx: task.ActivityContext, size: int) -> str:
    return "x" * size


def calls_huge(ctx: task.OrchestrationContext, size: int):
    return (yield ctx.call_activity(huge, input=size))


def returns_huge(ctx: task.OrchestrationContext, size: int) -> str:
    return "x" * size


def forever(ctx: task.OrchestrationContext, _: object):
    yield ctx.wait_for_external_event("never")
    return "done"


class Scenarios:
    """One method per scenario; each starts its own instance and returns what the test asserts on."""

    def __init__(self, c: client.TaskHubGrpcClient, name: str) -> None:
        self.c = c
        self.iid = f"{name}-{uuid.uuid4().hex[:8]}"

    def start(self, fn, inp=None):  # type: ignore[no-untyped-def]
        return self.c.schedule_new_orchestration(fn, input=inp, instance_id=self.iid)

    def finish(self) -> dict[str, object]:
        s = self.c.wait_for_orchestration_completion(self.iid, timeout=30)
        assert s is not None
        return {"status": s.runtime_status.name, "output": json.loads(s.serialized_output or "null")}

    def chaining(self) -> dict[str, object]:
        self.start(chaining)
        return self.finish()

    def fanout(self) -> dict[str, object]:
        self.start(fan_out, 20)
        return self.finish()

    def timer(self) -> dict[str, object]:
        self.start(timer, 1.0)
        t0 = time.time()
        return {**self.finish(), "elapsed": time.time() - t0}

    def event(self) -> dict[str, object]:
        self.start(approval)
        self.c.wait_for_orchestration_start(self.iid, timeout=30)
        self.c.raise_orchestration_event(self.iid, "approve", data="yes")
        return self.finish()

    def suborch(self) -> dict[str, object]:
        self.start(parent, 3)
        return self.finish()

    def continue_as_new(self) -> dict[str, object]:
        self.start(counter, 0)
        return self.finish()

    def failure(self) -> dict[str, object]:
        self.start(failing)
        s = self.c.wait_for_orchestration_completion(self.iid, timeout=30)
        assert s is not None and s.failure_details is not None
        return {"status": s.runtime_status.name, "message": s.failure_details.message}

    def _failed(self, fn, inp) -> dict[str, object]:  # type: ignore[no-untyped-def]
        t0 = time.time()
        self.start(fn, inp)
        # Well within the emulator's five-minute lease timeout, after which the same work would run again.
        s = self.c.wait_for_orchestration_completion(self.iid, timeout=60)
        assert s is not None and s.failure_details is not None
        return {
            "status": s.runtime_status.name,
            "type": s.failure_details.error_type,
            "message": s.failure_details.message,
            "elapsed": time.time() - t0,
        }

    def oversized_result(self) -> dict[str, object]:
        return self._failed(calls_huge, 2 * 1024 * 1024)

    def oversized_output(self) -> dict[str, object]:
        return self._failed(returns_huge, 2 * 1024 * 1024)

    def terminate(self) -> dict[str, object]:
        self.start(forever)
        self.c.wait_for_orchestration_start(self.iid, timeout=30)
        self.c.terminate_orchestration(self.iid, output="stopped")
        return self.finish()

    def _status(self) -> str:
        state = self.c.get_orchestration_state(self.iid)
        assert state is not None
        return state.runtime_status.name

    def suspend(self) -> dict[str, object]:
        self.start(approval)
        self.c.wait_for_orchestration_start(self.iid, timeout=30)
        self.c.suspend_orchestration(self.iid)
        deadline = time.time() + 20
        while self._status() != "SUSPENDED" and time.time() < deadline:
            time.sleep(0.05)
        suspended = self._status()
        self.c.raise_orchestration_event(self.iid, "approve", data="later")
        time.sleep(0.3)
        still = self._status()
        self.c.resume_orchestration(self.iid)
        return {"suspended": suspended, "while_suspended": still, **self.finish()}

    def rewind(self) -> dict[str, object]:
        self.start(rewindable, 5)
        failed = self.c.wait_for_orchestration_completion(self.iid, timeout=30)
        assert failed is not None
        self.c.rewind_orchestration(self.iid, reason="retry")
        return {"first": failed.runtime_status.name, **self.finish(), "flaky_calls": len(FLAKY_CALLS)}

    def _entity_state(self, target: entities.EntityInstanceId, expected: int) -> int | None:
        deadline = time.time() + 20
        while time.time() < deadline:
            found = self.c.get_entity(target)
            if found is not None and found.get_state(int) == expected:
                return expected
            time.sleep(0.05)
        found = self.c.get_entity(target)
        return None if found is None else found.get_state(int)

    def entity_signal(self) -> dict[str, object]:
        target = entities.EntityInstanceId("tally", self.iid)
        self.c.signal_entity(target, "add", 5)
        self.c.signal_entity(target, "add", 7)
        state = self._entity_state(target, 12)
        listed = [str(e.id) for e in self.c.get_all_entities()]
        return {"state": state, "listed": str(target) in listed}

    def entity_call(self) -> dict[str, object]:
        self.start(entity_caller, self.iid)
        return self.finish()

    def entity_lock(self) -> dict[str, object]:
        self.start(entity_locker, self.iid)
        result = self.finish()
        unlocked = self.c.get_entity(entities.EntityInstanceId("tally", self.iid + "a"))
        return {**result, "locked_after": None if unlocked is None else unlocked._locked_by or None}

    def purge_query(self) -> dict[str, object]:
        self.start(chaining)
        self.finish()
        found = [st.instance_id for st in self.c.get_all_orchestration_states()]
        purged = self.c.purge_orchestration(self.iid)
        after = self.c.get_orchestration_state(self.iid)
        return {"found": self.iid in found, "deleted": purged.deleted_instance_count, "after": after is None}


def main() -> None:
    address, scenarios = sys.argv[1], sys.argv[2:]
    w = worker.TaskHubGrpcWorker(host_address=address)
    for fn in (
        chaining,
        fan_out,
        timer,
        approval,
        child,
        parent,
        counter,
        failing,
        forever,
        rewindable,
        entity_caller,
        entity_locker,
        calls_huge,
        returns_huge,
    ):
        w.add_orchestrator(fn)
    for fn in (hello, double, fail, flaky, huge):
        w.add_activity(fn)
    w.add_entity(tally)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        for name in scenarios:
            result = getattr(Scenarios(c, name), name)()
            print(json.dumps({"scenario": name, **result}), flush=True)
    finally:
        w.stop()


if __name__ == "__main__":
    main()
