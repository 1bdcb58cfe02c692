"""The public helper classes of either SDK, used as an application or a test would use them; one JSON line.

Usage: ``python class_probes.py``. Covers ``StateShim`` with ``EntityContext`` (calling an entity function in a
unit test), ``OrchestrationEntityContext``, ``ExecutionResults``, ``JsonEncodeOutputException``,
``TaskFailureDetails`` and the record classes of ``durabletask.testing.in_memory_backend``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from durabletask.entities import EntityContext, EntityInstanceId
from durabletask.entities.entity_context import StateShim
from durabletask.entities.entity_operation_failed_exception import TaskFailureDetails
from durabletask.serialization import JsonDataConverter
from durabletask.testing import in_memory_backend
from durabletask.worker import ExecutionResults, JsonEncodeOutputException, OrchestrationEntityContext

A = EntityInstanceId("account", "a")
B = EntityInstanceId("account", "b")
C = EntityInstanceId("counter", "c")


def outcome(run: Any) -> Any:
    try:
        return {"ok": run()}
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}


def counter(ctx: EntityContext, value: Any) -> Any:
    """An entity function, called directly as a unit test calls it."""
    if ctx.operation == "add":
        ctx.set_state(ctx.get_state(int, 0) + value)
        ctx.signal_entity(C, "ping", value)
        return ctx.get_state(int)
    if ctx.operation == "fail":
        ctx.set_state(-1)
        raise ValueError("no")
    return ctx.get_state()


def state_shim() -> dict[str, Any]:
    converter = JsonDataConverter()
    shim = StateShim(5, converter)
    ctx = EntityContext("@counter@c", "add", shim, C, converter)
    out: dict[str, Any] = {"first": counter(ctx, 2), "encoded": shim.encode_state()}
    out["actions_before_commit"] = len(shim.get_operation_actions())
    shim.commit()
    out["actions"] = [a.sendSignal.name for a in shim.get_operation_actions()]
    failing = EntityContext("@counter@c", "fail", shim, C, converter)
    out["fail"] = outcome(lambda: counter(failing, None))
    out["after_failure"] = shim.encode_state()
    shim.rollback()
    out["after_rollback"] = shim.encode_state()
    out["wrong_type"] = outcome(lambda: shim.get_state(str))
    out["serialized_start"] = StateShim('{"a": 1}', converter, is_serialized=True).get_state()
    out["none"] = [StateShim(None, converter).encode_state(), StateShim(None, converter).get_state(int, 7)]
    out["bad_value"] = outcome(lambda: StateShim(None, converter).set_state({1}))
    shim.reset()
    out["reset"] = [shim.encode_state(), shim.get_operation_actions()]
    return out


def entity_context() -> list[Any]:
    ctx = OrchestrationEntityContext("orch-1")
    steps: list[Any] = [
        [
            "outside",
            ctx.is_inside_critical_section,
            ctx.validate_acquire_transition(),
            ctx.validate_operation_transition(A, False),
            list(ctx.get_available_entities()),
        ]
    ]
    request, target = ctx.emit_acquire_message("cs-1", [B, A, B])
    steps.append(
        [
            "requested",
            str(target.instanceId),
            list(request.entityLockRequested.lockSet),
            request.entityLockRequested.parentInstanceId.value,
            ctx.lock_acquisition_pending,
            [str(e) for e in ctx.critical_section_locks],
        ]
    )
    steps.append(["call before grant", ctx.validate_operation_transition(A, False)])
    steps.append(["wrong grant", outcome(lambda: ctx.complete_acquire("other"))])
    ctx.complete_acquire("cs-1")
    steps.append(["granted", ctx.lock_acquisition_pending, sorted(str(e) for e in ctx.get_available_entities())])
    steps.append(["call a", ctx.validate_operation_transition(A, False), sorted(str(e) for e in ctx.available_locks)])
    steps.append(["call unlocked", ctx.validate_operation_transition(C, False)])
    steps.append(["signal locked", ctx.validate_operation_transition(B, True)])
    steps.append(["signal unlocked", ctx.validate_operation_transition(C, True)])
    steps.append(["nested", ctx.validate_acquire_transition(), ctx.validate_suborchestration_transition()])
    ctx.recover_lock_after_call(A)
    steps.append(["returned", sorted(str(e) for e in ctx.available_locks)])
    releases = [
        (
            m.entityUnlockSent.criticalSectionId,
            m.entityUnlockSent.targetInstanceId.value,
            m.entityUnlockSent.parentInstanceId.value,
        )
        for m in ctx.emit_lock_release_messages()
    ]
    steps.append(["released", releases, ctx.is_inside_critical_section, ctx.critical_section_id])
    steps.append(["empty", list(OrchestrationEntityContext("x").emit_acquire_message("cs", []))])
    return steps


def _fields(cls: type) -> list[Any]:
    described = []
    for f in dataclasses.fields(cls):
        default = None if f.default is dataclasses.MISSING else repr(f.default)
        factory = None if f.default_factory is dataclasses.MISSING else type(f.default_factory()).__name__
        described.append([f.name, default, factory])
    return described


def records() -> dict[str, Any]:
    m = in_memory_backend
    built = {
        "OrchestrationInstance": m.OrchestrationInstance("i", "orch", 0),
        "ActivityWorkItem": m.ActivityWorkItem("i", "act", 1, None, 2),
        "EntityState": m.EntityState("@e@k"),
        "PendingLockRequest": m.PendingLockRequest("cs", "i", ["@e@k"]),
        "EntityWorkItem": m.EntityWorkItem("@e@k", None, [], 3),
        "StateWaiter": m.StateWaiter(lambda instance: True),
    }
    out: dict[str, Any] = {}
    for name, record in built.items():
        cls = type(record)
        values = {f.name: type(getattr(record, f.name)).__name__ for f in dataclasses.fields(cls)}
        out[name] = {"fields": _fields(cls), "value_types": values}
    waiter = built["StateWaiter"]
    out["waiter"] = [waiter.predicate(built["OrchestrationInstance"]), waiter.event.is_set(), waiter.result]
    return out


def others() -> dict[str, Any]:
    results = ExecutionResults(actions=[], encoded_custom_status='"s"')
    error = JsonEncodeOutputException({1, 2})
    details = TaskFailureDetails(errorType="E", errorMessage="m")
    return {
        "results": [results.actions, results.encoded_custom_status],
        "results_positional": ExecutionResults([], None, None).encoded_custom_status,
        "json_error": [str(error), sorted(error.problem_object), isinstance(error, Exception)],
        "task_failure_details": [
            type(details).__name__,
            details.errorType,
            details.errorMessage,
            sorted(f.name for f in details.DESCRIPTOR.fields),
        ],
    }


if __name__ == "__main__":
    print(
        json.dumps(
            {"state_shim": state_shim(), "entity_context": entity_context(), "records": records(), "others": others()},
            default=str,
        )
    )
