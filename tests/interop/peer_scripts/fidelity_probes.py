"""Behaviours where DTS differs from Microsoft's in-memory backend, probed under either SDK on one backend.

Usage: ``python fidelity_probes.py PROBE ADDRESS TASKHUB``; prints one JSON line. Only the public API both packages
share is used (the reuse policy is the protocol message both expose as ``durabletask.internal``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import grpc

from durabletask import client, entities, task, worker
from durabletask.internal import orchestrator_service_pb2 as pb

WAIT = 60


def fidelity_greet(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello, {name}!"


def fidelity_child(ctx: task.OrchestrationContext, _: Any) -> str:
    return "Child completed"


def fidelity_complex(ctx: task.OrchestrationContext, _: Any) -> Any:
    greeting = yield ctx.call_activity(fidelity_greet, input="World")
    yield ctx.create_timer(ctx.current_utc_datetime + timedelta(seconds=0.2))
    child = yield ctx.call_sub_orchestrator(fidelity_child)
    return {"greeting": greeting, "child": child}


def fidelity_waits(ctx: task.OrchestrationContext, value: Any) -> Any:
    yield ctx.wait_for_external_event("never")
    return value


def fidelity_calls_entity(ctx: task.OrchestrationContext, key: str) -> Any:
    value = yield ctx.call_entity(entities.EntityInstanceId("counter", key), "get")
    return value


def fidelity_versioned(ctx: task.OrchestrationContext, name: str) -> Any:
    greeting = yield ctx.call_activity(fidelity_greet, input=name)
    return greeting


def _client(address: str, taskhub: str) -> Any:
    return client.TaskHubGrpcClient(host_address=address, metadata=[("taskhub", taskhub)])


@contextmanager
def _worker(
    address: str,
    taskhub: str,
    orchestrators: tuple[Callable[..., Any], ...],
    activities: tuple[Callable[..., Any], ...] = (),
    setup: Callable[[Any], None] | None = None,
) -> Iterator[Any]:
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)])
    for fn in orchestrators:
        w.add_orchestrator(fn)
    for fn in activities:
        w.add_activity(fn)
    if setup is not None:
        setup(w)
    w.start()
    try:
        yield w
    finally:
        w.stop()


def _outcome(call: Callable[[], Any]) -> Any:
    """``ok`` (or a plain result), else [status code name, details] of the gRPC error the call raised."""
    try:
        value = call()
    except grpc.RpcError as error:
        return [error.code().name, error.details()]
    return value if isinstance(value, (bool, int, str)) else "ok"


def _status(state: Any) -> str | None:
    return state.runtime_status.name if state is not None else None


def history(address: str, taskhub: str) -> Any:
    """The stored history of an orchestration with an activity, a timer and a sub-orchestration."""
    c = _client(address, taskhub)
    with _worker(address, taskhub, (fidelity_complex, fidelity_child), (fidelity_greet,)):
        iid = c.schedule_new_orchestration(fidelity_complex, instance_id=f"history-{time.time_ns()}")
        state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    events = c.get_orchestration_history(iid)
    c.close()
    return {"status": _status(state), "events": [type(e).__name__.removesuffix("Event") for e in events]}


def entity_ids(address: str, taskhub: str) -> Any:
    """Signals and reads of entity IDs of 100 and 101 characters, and an orchestration calling the longer one."""
    c = _client(address, taskhub)
    key_100 = "k" * (100 - len("@counter@"))
    found: dict[str, Any] = {
        "signal_100": _outcome(lambda: c.signal_entity(entities.EntityInstanceId("counter", key_100), "add", 1)),
        "signal_101": _outcome(lambda: c.signal_entity(entities.EntityInstanceId("counter", key_100 + "k"), "add")),
        "get_101": _outcome(lambda: c.get_entity(entities.EntityInstanceId("counter", key_100 + "k"))),
    }
    with _worker(address, taskhub, (fidelity_calls_entity,)):
        iid = c.schedule_new_orchestration(fidelity_calls_entity, input=key_100 + "k")
        state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    failure = state.failure_details if state is not None else None
    message = failure.message.replace(iid, "<id>") if failure else None
    found["call_101"] = [_status(state), failure.error_type if failure else None, message]
    c.close()
    return found


def restart(address: str, taskhub: str) -> Any:
    """Restarting an instance that is still RUNNING, under a new ID and under its own."""
    c = _client(address, taskhub)
    with _worker(address, taskhub, (fidelity_waits,)):
        iid = c.schedule_new_orchestration(fidelity_waits, input="original", instance_id=f"restart-{time.time_ns()}")
        c.wait_for_orchestration_start(iid, timeout=WAIT)
        same = _outcome(lambda: c.restart_orchestration(iid))
        new_id = c.restart_orchestration(iid, restart_with_new_instance_id=True)
        copy = c.wait_for_orchestration_start(new_id, timeout=WAIT, fetch_payloads=True)
        found = {
            "same_id": [same[0], "restartWithNewInstanceId" in same[1]] if isinstance(same, list) else same,
            "new_id_differs": new_id != iid,
            "original": _status(c.get_orchestration_state(iid)),
            "copy": [_status(copy), copy.serialized_input if copy else None],
        }
        for instance in (iid, new_id):
            c.terminate_orchestration(instance)
    c.close()
    return found


def _suspended(c: Any, iid: str) -> str | None:
    deadline = time.monotonic() + WAIT
    state = c.get_orchestration_state(iid)
    while _status(state) != "SUSPENDED" and time.monotonic() < deadline:
        time.sleep(0.05)  # a suspension takes effect when the orchestrator next runs; nothing to block on
        state = c.get_orchestration_state(iid)
    return _status(state)


def reuse(address: str, taskhub: str) -> Any:
    """A start whose policy replaces suspended but not terminated instances, against a suspended instance."""
    c = _client(address, taskhub)
    # The complement durabletask-js and -dotnet send for dedupe statuses TERMINATED, RUNNING and PENDING.
    policy = pb.OrchestrationIdReusePolicy(
        replaceableStatus=[
            pb.ORCHESTRATION_STATUS_COMPLETED,
            pb.ORCHESTRATION_STATUS_FAILED,
            pb.ORCHESTRATION_STATUS_CANCELED,
            pb.ORCHESTRATION_STATUS_SUSPENDED,
        ]
    )
    with _worker(address, taskhub, (fidelity_waits,)):
        iid = c.schedule_new_orchestration(fidelity_waits, input="original", instance_id=f"reuse-{time.time_ns()}")
        c.wait_for_orchestration_start(iid, timeout=WAIT)
        c.suspend_orchestration(iid)
        before = _suspended(c, iid)
        refused = _outcome(
            lambda: c.schedule_new_orchestration(
                fidelity_waits, input="replacement", instance_id=iid, reuse_id_policy=policy
            )
        )
        after = c.get_orchestration_state(iid, fetch_payloads=True)
        c.terminate_orchestration(iid)
    c.close()
    return {"before": before, "refused": refused, "after": [_status(after), after.serialized_input if after else None]}


def _explicit_filters(w: Any) -> None:
    w.use_work_item_filters(
        worker.WorkItemFilters(
            orchestrations=[worker.OrchestrationWorkItemFilter(name="fidelity_versioned", versions=["3.0.0"])],
            activities=[worker.ActivityWorkItemFilter(name="fidelity_greet", versions=["3.0.0"])],
        )
    )


def _strict_versioning(w: Any) -> None:
    w.use_versioning(worker.VersioningOptions(version="3.0.0", match_strategy=worker.VersionMatchStrategy.STRICT))
    w.use_work_item_filters()  # generated from the registry, with the worker's version on every name


def filters(address: str, taskhub: str) -> Any:
    """Orchestrations of version 3.0.0 whose activity is scheduled without a version, on workers filtering 3.0.0."""
    c = _client(address, taskhub)
    found: dict[str, Any] = {}
    for label, setup in (("explicit", _explicit_filters), ("strict_versioning", _strict_versioning)):
        with _worker(address, taskhub, (fidelity_versioned,), (fidelity_greet,), setup):
            iid = c.schedule_new_orchestration(fidelity_versioned, input=label, version="3.0.0")
            state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
        found[label] = [_status(state), state.serialized_output if state else None]
    c.close()
    return found


def main(argv: list[str]) -> int:
    probe, *args = argv
    probes: dict[str, Callable[..., Any]] = {
        "history": history,
        "entity_ids": entity_ids,
        "restart": restart,
        "reuse": reuse,
        "filters": filters,
    }
    logging.disable(logging.CRITICAL)  # the SDKs' INFO lines go to stderr; keep the output to the one JSON line
    print(json.dumps(probes[probe](*args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
