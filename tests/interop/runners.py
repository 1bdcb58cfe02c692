"""Client-side steps of each interop scenario; each returns plain JSON that the tests compare.

Runs unchanged under either SDK: in the peer process (Microsoft's SDK) and in the pytest process (ours).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import grpc

from durabletask import client
from durabletask.entities import EntityInstanceId

if __package__:
    from . import scenarios as sc
    from .harness import WAIT, Harness, filtered
else:  # the peer imports this folder's modules as top-level ones, never through the repository root
    import scenarios as sc  # type: ignore[no-redef,import-not-found]
    from harness import WAIT, Harness, filtered  # type: ignore[no-redef,import-not-found]

# Scenarios --------------------------------------------------------------------------------------------------------


def finish(c: Any, instance_id: str) -> dict[str, Any]:
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    result: dict[str, Any] = {"status": state.runtime_status.name}
    if state.serialized_output is not None:
        result["output"] = json.loads(state.serialized_output)
    if state.failure_details is not None:
        result["error"] = state.failure_details.message.replace(instance_id, "<id>")
    return result


def wait_until(read: Callable[[], Any], expected: Any) -> Any:
    """What ``read`` returns once it equals ``expected``, or the last value seen when a bounded wait runs out.

    Used only where the API offers nothing to block on: a backend may apply a suspension when the orchestration
    next runs rather than inside the call, and entity signals are one-way.
    """
    deadline = time.monotonic() + 10
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def _status(c: Any, instance_id: str) -> Callable[[], str]:
    return lambda: str(c.get_orchestration_state(instance_id).runtime_status.name)


def _entity_state(c: Any, entity_id: Any) -> Callable[[], Any]:
    def read() -> Any:
        return _raw_entity_state(c.get_entity(entity_id))

    return read


def custom_status(c: Any, instance_id: str) -> Callable[[], Any]:
    def read() -> Any:
        state = c.get_orchestration_state(instance_id)
        return json.loads(state.serialized_custom_status) if state and state.serialized_custom_status else None

    return read


def _outcome(call: Callable[[], Any]) -> Any:
    """``ok`` (or a plain result), else the gRPC status code name or exception type the call raised."""
    try:
        value = call()
    except grpc.RpcError as error:
        return error.code().name
    except Exception as error:
        return type(error).__name__
    return value if isinstance(value, (bool, int, str)) else "ok"


def _raw_entity_state(metadata: Any) -> Any:
    # get_state() gives the stored JSON text in both SDKs (typed access differs between them, so decode here);
    # an entity that exists only as queued operations may report an empty text.
    raw = metadata.get_state() if metadata else None
    return json.loads(raw) if raw else None


def _run_one(h: Harness, orchestrator: Callable[..., Any], value: Any, label: str, **worker_args: Any) -> Any:
    h.worker(orchestrators=(orchestrator,), **worker_args)
    c = h.client()
    return finish(c, c.schedule_new_orchestration(orchestrator, input=value, instance_id=h.new_id(label)))


def chaining(h: Harness) -> Any:
    return _run_one(h, sc.chaining, None, "chain", activities=(sc.hello,))


def fan_out_fan_in(h: Harness) -> Any:
    return _run_one(h, sc.fan_out_fan_in, 10, "fan", activities=(sc.double,))


def timers(h: Harness) -> Any:
    started = time.monotonic()
    result = _run_one(h, sc.timer, 1.0, "timer")
    result["elapsed_at_least_delay"] = time.monotonic() - started >= 1.0
    return result


def external_event(h: Harness) -> Any:
    h.worker(orchestrators=(sc.approval, sc.approval_with_timeout))
    c = h.client()
    plain = c.schedule_new_orchestration(sc.approval, instance_id=h.new_id("plain"))
    bounded = c.schedule_new_orchestration(sc.approval_with_timeout, input=60, instance_id=h.new_id("bounded"))
    c.wait_for_orchestration_start(plain, timeout=WAIT)
    c.raise_orchestration_event(plain, "approve", data="yes")
    c.raise_orchestration_event(bounded, "approve", data="in time")
    return {"plain": finish(c, plain), "with_timeout": finish(c, bounded)}


def external_event_timeout(h: Harness) -> Any:
    return _run_one(h, sc.approval_with_timeout, 0.5, "timeout")


def sub_orchestrations(h: Harness) -> Any:
    h.worker(orchestrators=(sc.parent, sc.child), activities=(sc.double,))
    c = h.client()
    instance_id = c.schedule_new_orchestration(sc.parent, input=3, instance_id=h.new_id("parent"))
    result = finish(c, instance_id)
    children = [c.get_orchestration_state(f"{instance_id}-child-{i}") for i in range(3)]
    result["children"] = [s.runtime_status.name if s else None for s in children]
    return result


def retries(h: Harness) -> Any:
    h.worker(orchestrators=(sc.retrying,), activities=(sc.flaky,))
    c = h.client()
    outcomes = {}
    for label, attempts in (("enough", 3), ("too_few", 2)):
        args = {"dir": h.workdir, "name": label, "failures": 2, "attempts": attempts}
        outcome = finish(c, c.schedule_new_orchestration(sc.retrying, input=args, instance_id=h.new_id(label)))
        outcome["executions"] = sc.executions(h.workdir, label)
        outcomes[label] = outcome
    return outcomes


def retry_timeout(h: Harness) -> Any:
    h.worker(orchestrators=(sc.retrying_with_timeout,), activities=(sc.flaky,))
    c = h.client()
    args = {"dir": h.workdir, "name": "timeout", "failures": 99}
    instance_id = c.schedule_new_orchestration(sc.retrying_with_timeout, input=args, instance_id=h.new_id("timeout"))
    outcome = finish(c, instance_id)
    outcome["executions"] = sc.executions(h.workdir, "timeout")
    return outcome


def _failure_chain(details: Any) -> list[Any]:
    chain = []
    while details is not None:
        chain.append([details.error_type.rsplit(".", 1)[-1], details.properties])
        details = details.inner_failure
    return chain


def exception_properties(h: Harness) -> Any:
    h.worker(
        orchestrators=(sc.coded_failures,),
        activities=(sc.coded_activity,),
        entities=(sc.coded_entity,),
        exception_properties_provider=sc.CodeProvider(),
    )
    c = h.client()
    chains = {}
    for kind in ("orchestrator", "activity", "entity"):
        instance_id = c.schedule_new_orchestration(sc.coded_failures, input=kind, instance_id=h.new_id(kind))
        state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
        chains[kind] = _failure_chain(state.failure_details)
    return chains


def continue_as_new(h: Harness) -> Any:
    return _run_one(h, sc.counter, 0, "can", activities=(sc.double,))


def suspend_resume(h: Harness) -> Any:
    h.worker(orchestrators=(sc.approval,))
    c = h.client()
    instance_id = c.schedule_new_orchestration(sc.approval, instance_id=h.new_id("suspend"))
    c.wait_for_orchestration_start(instance_id, timeout=WAIT)
    c.suspend_orchestration(instance_id, reason="hold")
    suspended = wait_until(_status(c, instance_id), "SUSPENDED")
    c.raise_orchestration_event(instance_id, "approve", data="later")
    try:
        c.wait_for_orchestration_completion(instance_id, timeout=1)
        held = "completed while suspended"
    except TimeoutError:
        held = c.get_orchestration_state(instance_id).runtime_status.name
    c.resume_orchestration(instance_id, reason="go")
    return {"suspended": suspended, "after_event": held, **finish(c, instance_id)}


def terminate(h: Harness) -> Any:
    h.worker(orchestrators=(sc.waiter,))
    c = h.client()
    instance_id = c.schedule_new_orchestration(sc.waiter, instance_id=h.new_id("term"))
    c.wait_for_orchestration_start(instance_id, timeout=WAIT)
    c.terminate_orchestration(instance_id, output="stopped")
    return finish(c, instance_id)


def purge(h: Harness) -> Any:
    h.worker(orchestrators=(sc.echo,))
    c = h.client()
    # Only this scenario's instances are newer than this (a millisecond of slack for stored time precision);
    # the backend may hold finished instances from earlier scenarios.
    since = datetime.now(timezone.utc) - timedelta(milliseconds=1)
    ids = [c.schedule_new_orchestration(sc.echo, input=i, instance_id=h.new_id(f"p{i}")) for i in range(3)]
    for instance_id in ids:
        c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    single = c.purge_orchestration(ids[0]).deleted_instance_count
    again = c.purge_orchestration(ids[0]).deleted_instance_count
    by_filter = c.purge_orchestrations_by(
        created_time_from=since, runtime_status=[client.OrchestrationStatus.COMPLETED]
    )
    return {
        "single": single,
        "again": again,
        "by_filter": by_filter.deleted_instance_count,
        "remaining": [c.get_orchestration_state(i) is not None for i in ids],
    }


def query(h: Harness) -> Any:
    h.worker(orchestrators=(sc.echo, sc.waiter))
    c = h.client()
    done = [c.schedule_new_orchestration(sc.echo, input=i, instance_id=h.new_id(f"done-{i}")) for i in range(5)]
    running = [c.schedule_new_orchestration(sc.waiter, instance_id=h.new_id(f"run-{i}")) for i in range(2)]
    for instance_id in done:
        c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    for instance_id in running:
        c.wait_for_orchestration_start(instance_id, timeout=WAIT)

    def find(**kwargs: Any) -> list[str]:
        states = c.get_all_orchestration_states(client.OrchestrationQuery(instance_id_prefix=h.prefix, **kwargs))
        return sorted(s.instance_id.removeprefix(h.prefix) for s in states)

    result = {
        "completed": find(runtime_status=[client.OrchestrationStatus.COMPLETED]),
        "running": find(runtime_status=[client.OrchestrationStatus.RUNNING]),
        "paged": find(max_instance_count=2),
        "with_payloads": sorted(
            json.loads(s.serialized_output)
            for s in c.get_all_orchestration_states(
                client.OrchestrationQuery(instance_id_prefix=h.new_id("done"), fetch_inputs_and_outputs=True)
            )
        ),
        "id_pages": _list_ids_in_pages(c, h.prefix),
    }
    for instance_id in running:
        c.terminate_orchestration(instance_id)
    return result


def _list_ids_in_pages(c: Any, prefix: str) -> dict[str, Any]:
    ids: list[str] = []
    pages = 0
    token = None
    largest = 0
    while True:
        page = c.list_instance_ids(
            runtime_status=[client.OrchestrationStatus.COMPLETED], page_size=2, continuation_token=token
        )
        pages += 1
        largest = max(largest, len(page.items))
        ids.extend(i.removeprefix(prefix) for i in page.items if i.startswith(prefix))
        token = page.continuation_token
        if not token or pages > 1000:
            break
    return {"ids": sorted(ids), "several_pages": pages > 1, "largest_page": largest}


def entities(h: Harness) -> Any:
    h.worker(orchestrators=(sc.entity_user,), entities=(sc.tally,))
    c = h.client()
    key = h.prefix
    first, second = EntityInstanceId("tally", f"{key}-a"), EntityInstanceId("tally", f"{key}-b")
    c.signal_entity(first, "add", 5)
    after_signal = wait_until(_entity_state(c, first), 5)
    if after_signal != 5:  # entities do not work at all here; the rest would only wait out its deadlines
        return {"after_signal": after_signal}
    result = finish(c, c.schedule_new_orchestration(sc.entity_user, input=key, instance_id=h.new_id("ent")))
    second_state = wait_until(_entity_state(c, second), 11)
    metadata = c.get_entity(first)
    result.update(
        {
            "after_signal": after_signal,
            "second_after_signal": second_state,
            "first_final": _raw_entity_state(metadata),
        }
    )
    return result


def entity_admin(h: Harness) -> Any:
    h.worker(orchestrators=(sc.entity_failure,), entities=(sc.tally,))
    c = h.client()
    ids = [EntityInstanceId("tally", f"{h.prefix}-{i}") for i in range(3)]
    for i, entity_id in enumerate(ids):
        c.signal_entity(entity_id, "add", i + 1)
    states = []
    for i, entity_id in enumerate(ids):
        states.append(wait_until(_entity_state(c, entity_id), i + 1))
        if states[-1] != i + 1:  # entities do not work here; the rest would only wait out its deadlines
            return {"states": states}
    query = client.EntityQuery(instance_id_starts_with=f"@tally@{h.prefix}", include_state=True, page_size=2)
    found = sorted(
        (str(m.id).removeprefix(f"@tally@{h.prefix}"), _raw_entity_state(m)) for m in c.get_all_entities(query)
    )
    failure = finish(
        c, c.schedule_new_orchestration(sc.entity_failure, input=f"{h.prefix}-0", instance_id=h.new_id("explode"))
    )
    failure["output"]["message"] = failure["output"]["message"].replace(h.prefix, "<prefix>")
    c.signal_entity(ids[2], "delete")
    state_after_delete = wait_until(_entity_state(c, ids[2]), None)
    exists_after_delete = c.get_entity(ids[2]) is not None
    cleaned = c.clean_entity_storage()
    return {
        "states": states,
        "found": found,
        "failure": failure,
        "state_after_failure": _raw_entity_state(c.get_entity(ids[0])),
        "state_after_delete": state_after_delete,
        "exists_after_delete": exists_after_delete,
        # The official backend counts across every task hub, so only "some" is comparable.
        "cleaned": [cleaned.empty_entities_removed > 0, cleaned.orphaned_locks_released],
        "exists_after_clean": c.get_entity(ids[2]) is not None,
    }


def work_item_filters(h: Harness) -> Any:
    pids = {h.spawn("specialist-a").pid: "specialist-a", h.spawn("specialist-b").pid: "specialist-b"}
    pids[os.getpid()] = "orchestrator-worker"
    h.worker(orchestrators=(sc.specialists,), configure=filtered)
    c = h.client()
    result = finish(c, c.schedule_new_orchestration(sc.specialists, input=3, instance_id=h.new_id("filters")))
    if "output" in result:
        result["output"] = [f"{r['activity']}{r['n']}@{pids.get(r['pid'], 'unknown')}" for r in result["output"]]
    return result


def versioning(h: Harness) -> Any:
    pids = {h.spawn("version-1").pid: "version-1"}
    c = h.client()
    newer = c.schedule_new_orchestration(sc.versioned, instance_id=h.new_id("v2"), version="2.0")
    try:
        c.wait_for_orchestration_completion(newer, timeout=1.5)
        held = "ran on the mismatching worker"
    except TimeoutError:
        held = c.get_orchestration_state(newer).runtime_status.name
    pids[h.spawn("version-2").pid] = "version-2"
    older = c.schedule_new_orchestration(sc.versioned, instance_id=h.new_id("v1"), version="1.0")
    result: dict[str, Any] = {"while_only_v1": held}
    for label, instance_id in (("v2", newer), ("v1", older)):
        outcome = finish(c, instance_id)
        if "output" in outcome:
            output = outcome["output"]
            outcome["output"] = {"version": output["version"], "ran_on": pids.get(output["pid"], "unknown")}
        result[label] = outcome
    return result


def rewind(h: Harness) -> Any:
    h.worker(orchestrators=(sc.rewindable,), activities=(sc.fragile, sc.fragile_free))
    c = h.client()
    instance_id = c.schedule_new_orchestration(sc.rewindable, input=h.workdir, instance_id=h.new_id("rewind"))
    failed = finish(c, instance_id)
    (Path(h.workdir) / sc.FIXED_MARKER).touch()
    c.rewind_orchestration(instance_id, reason="dependency restored")
    result = finish(c, instance_id)
    result.update(
        {
            "first_run": failed["status"],
            "steady_runs": sc.executions(h.workdir, "steady"),
            "fragile_runs": sc.executions(h.workdir, "fragile"),
        }
    )
    return result


def history_and_state(h: Harness) -> Any:
    h.worker(orchestrators=(sc.eventful, sc.child), activities=(sc.hello, sc.double))
    c = h.client()
    instance_id = c.schedule_new_orchestration(sc.eventful, input="Ada", instance_id=h.new_id("history"))
    stage = wait_until(custom_status(c, instance_id), {"stage": "waiting"})
    c.raise_orchestration_event(instance_id, "go", data="yes")
    result = finish(c, instance_id)
    state = c.get_orchestration_state(instance_id)
    result.update(
        {
            "stage": stage,
            "name": state.name,
            "input": state.serialized_input,
            "custom_status": json.loads(state.serialized_custom_status),
            "times_ordered": state.created_at <= state.last_updated_at,
            "history": [type(event).__name__ for event in c.get_orchestration_history(instance_id)],
        }
    )
    return result


def _failure(c: Any, instance_id: str) -> Any:
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    details = state.failure_details
    return [state.runtime_status.name, details.error_type if details else None]


def edge_cases(h: Harness) -> Any:
    h.worker(orchestrators=(sc.echo, sc.waiter, sc.failing, sc.calls_unknown), activities=(sc.broken,))
    c = h.client()
    done = c.schedule_new_orchestration(sc.echo, input="x", instance_id=h.new_id("done"))
    running = c.schedule_new_orchestration(sc.waiter, instance_id=h.new_id("running"))
    failed = c.schedule_new_orchestration(sc.failing, instance_id=h.new_id("failed"))
    finish(c, done)
    c.wait_for_orchestration_start(running, timeout=WAIT)
    failure = c.wait_for_orchestration_completion(failed, timeout=WAIT).failure_details
    missing = h.new_id("missing")
    result = {
        "failure_type": failure.error_type,
        "get_missing": c.get_orchestration_state(missing) is None,
        "raise_event_missing": _outcome(lambda: c.raise_orchestration_event(missing, "e")),
        "suspend_missing": _outcome(lambda: c.suspend_orchestration(missing)),
        "resume_missing": _outcome(lambda: c.resume_orchestration(missing)),
        "terminate_missing": _outcome(lambda: c.terminate_orchestration(missing)),
        "purge_missing": _outcome(lambda: c.purge_orchestration(missing).deleted_instance_count),
        "rewind_missing": _outcome(lambda: c.rewind_orchestration(missing)),
        "rewind_completed": _outcome(lambda: c.rewind_orchestration(done)),
        "start_existing_running": _outcome(lambda: c.schedule_new_orchestration(sc.waiter, instance_id=running)),
        "start_existing_completed": _outcome(lambda: c.schedule_new_orchestration(sc.echo, instance_id=done) == done),
        "purge_running": _outcome(lambda: c.purge_orchestration(running).deleted_instance_count),
        "terminate_completed": _outcome(lambda: c.terminate_orchestration(done)),
        "raise_event_completed": _outcome(lambda: c.raise_orchestration_event(done, "e")),
    }
    c.terminate_orchestration(running)
    result["oversized_input"] = _outcome(lambda: bool(c.schedule_new_orchestration(sc.echo, input="x" * (1 << 21))))
    result["unknown_activity"] = _failure(c, c.schedule_new_orchestration(sc.calls_unknown))
    result["unknown_orchestrator"] = _failure(c, c.schedule_new_orchestration("no_such_orchestrator"))
    result["restart_same_id"] = _outcome(lambda: c.restart_orchestration(failed) == failed)
    result["restart_new_id"] = _outcome(
        lambda: c.restart_orchestration(done, restart_with_new_instance_id=True) != done
    )
    return result


SCENARIOS: dict[str, Callable[[Harness], Any]] = {
    "chaining": chaining,
    "fan_out_fan_in": fan_out_fan_in,
    "timers": timers,
    "external_event": external_event,
    "external_event_timeout": external_event_timeout,
    "sub_orchestrations": sub_orchestrations,
    "retries": retries,
    "retry_timeout": retry_timeout,
    "exception_properties": exception_properties,
    "continue_as_new": continue_as_new,
    "suspend_resume": suspend_resume,
    "terminate": terminate,
    "purge": purge,
    "query": query,
    "entities": entities,
    "work_item_filters": work_item_filters,
    "versioning": versioning,
    "rewind": rewind,
    "edge_cases": edge_cases,
    "history_and_state": history_and_state,
    "entity_admin": entity_admin,
}
