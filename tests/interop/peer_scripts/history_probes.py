"""History events under either SDK: ``to_dict`` results, and the events read from wire messages; one JSON line.

Usage: ``python history_probes.py to_dict|from_wire``. Only ``durabletask.history``, ``durabletask.task`` and the
protobuf module both packages ship at ``durabletask.internal.orchestrator_service_pb2`` are used; reading a wire
event goes through each SDK's own converter (Microsoft's private ``history._from_protobuf``, our
``durabletask._grpc.convert.history_event_from_pb``), the one its clients use for ``get_orchestration_history``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import OrderedDict, defaultdict, namedtuple
from datetime import datetime, timedelta, timezone
from typing import Any

from google.protobuf import timestamp_pb2, wrappers_pb2

import durabletask.internal.orchestrator_service_pb2 as pb
from durabletask import history, task

T0 = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
Pair = namedtuple("Pair", "left right")


class Stamp(datetime):
    """A datetime subclass, as a backend or application might hand one over."""


class Tagged(dict):  # type: ignore[type-arg]
    """A dict subclass."""


class Items(list):  # type: ignore[type-arg]
    """A list subclass."""


@dataclasses.dataclass
class Nested:
    when: datetime
    items: list[Any]


def describe(value: Any) -> Any:
    """The value with every container's and leaf's type spelled out, so two results compare exactly."""
    kind = type(value).__name__
    if isinstance(value, dict):
        return [kind, [[describe(k), describe(v)] for k, v in value.items()]]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [kind, [describe(v) for v in items]]
    if isinstance(value, datetime):
        return [kind, value.isoformat()]
    if dataclasses.is_dataclass(value):
        return [kind, [[f.name, describe(getattr(value, f.name))] for f in dataclasses.fields(value)]]
    if value is None or isinstance(value, (bool, int, float, str, bytes, timedelta)):
        return [kind, repr(value)]
    return [kind]


def failure(depth: int = 2) -> task.FailureDetails:
    inner = failure(depth - 1) if depth > 1 else None
    return task.FailureDetails(
        f"boom {depth}", "builtins.ValueError", "Traceback ...", inner, {"code": depth, "tags": ["a", T0]}
    )


def shaped_values() -> dict[str, Any]:
    """Values the free-form fields (``orchestration_state``, ``tags``, ``lock_set``, ``input``) may be given."""
    return {
        "tuple": (1, T0, [T0], {"k": T0}),
        "namedtuple": Pair(T0, [1, 2]),
        "defaultdict": defaultdict(list, {"a": [T0]}),
        "ordered": OrderedDict(b=1, a=T0),
        "dict_subclass": Tagged(x=[T0]),
        "list_subclass": Items([T0, {"y": 1}]),
        "datetime_subclass": Stamp(2024, 1, 2, tzinfo=timezone.utc),
        "naive": datetime(2024, 1, 2, 3, 4, 5),
        "offset": datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
        "set": {3, 1, 2},
        "int_keys": {1: "one", 2: T0},
        "tuple_keys": {(1, 2): [T0]},
        "mixed_keys": {"a": T0, 3: [T0]},
        "dataclass": Nested(T0, [T0, (T0,)]),
        "failure": failure(),
        "bytes": b"\x00\x01",
        "timedelta": timedelta(seconds=3),
        "deep": {"a": [{"b": [T0, {"c": (T0, [T0])}]}]},
    }


def events() -> dict[str, history.HistoryEvent]:
    """One event of every type, with every optional field set, plus the free-form fields holding each shape."""
    h = history
    instance = h.OrchestrationInstance("parent", "exec-1")
    parent = h.ParentInstanceInfo(3, "parent_orch", "1.0", instance)
    trace = h.TraceContext("00-abc-def-01", "def", "state=1")
    built: dict[str, history.HistoryEvent] = {
        "started": h.ExecutionStartedEvent(
            1, T0, "orch", "2.0", '"in"', h.OrchestrationInstance("id", "e"), parent, T0, trace, "span", {"t": "1"}
        ),
        "completed": h.ExecutionCompletedEvent(2, T0, 3, '"out"', failure()),
        "terminated": h.ExecutionTerminatedEvent(3, T0, '"why"', True),
        "scheduled": h.TaskScheduledEvent(4, T0, "act", "1", '"x"', trace, {"k": "v"}),
        "task_completed": h.TaskCompletedEvent(5, T0, 4, '"r"'),
        "task_failed": h.TaskFailedEvent(6, T0, 4, failure(3)),
        "sub_created": h.SubOrchestrationInstanceCreatedEvent(7, T0, "child", "sub", "1", '"i"', trace, {"a": "b"}),
        "sub_completed": h.SubOrchestrationInstanceCompletedEvent(8, T0, 7, '"r"'),
        "sub_failed": h.SubOrchestrationInstanceFailedEvent(9, T0, 7, failure(1)),
        "timer_created": h.TimerCreatedEvent(10, T0, T0 + timedelta(seconds=5)),
        "timer_fired": h.TimerFiredEvent(11, T0, T0 + timedelta(seconds=5), 10),
        "orch_started": h.OrchestratorStartedEvent(12, T0),
        "orch_completed": h.OrchestratorCompletedEvent(13, T0),
        "sent": h.EventSentEvent(14, T0, "other", "ping", '"p"'),
        "raised": h.EventRaisedEvent(15, T0, "ping", '"p"'),
        "generic": h.GenericEvent(16, T0, "data"),
        "state": h.HistoryStateEvent(17, T0, {"instance_id": "x", "nested": {"list": [1, {"deep": T0}]}}),
        "continued": h.ContinueAsNewEvent(18, T0, '"n"'),
        "suspended": h.ExecutionSuspendedEvent(19, T0, '"s"'),
        "resumed": h.ExecutionResumedEvent(20, T0, '"r"'),
        "signaled": h.EntityOperationSignaledEvent(21, T0, "req", "add", T0, "1", "@counter@a"),
        "called": h.EntityOperationCalledEvent(22, T0, "req", "get", T0, None, "p", "pe", "@counter@a"),
        "entity_completed": h.EntityOperationCompletedEvent(23, T0, "req", "5"),
        "entity_failed": h.EntityOperationFailedEvent(24, T0, "req", failure()),
        "lock_requested": h.EntityLockRequestedEvent(25, T0, "cs", ["@a@1", "@b@2"], 0, "p"),
        "lock_granted": h.EntityLockGrantedEvent(26, T0, "cs"),
        "unlock_sent": h.EntityUnlockSentEvent(27, T0, "cs", "p", "@a@1"),
        "rewound": h.ExecutionRewoundEvent(28, T0, "why", "pe", "id", trace, "orch", "1", '"i"', parent, {"x": "y"}),
    }
    for name, value in shaped_values().items():
        built[f"state_{name}"] = h.HistoryStateEvent(100, T0, {"value": value})
        built[f"tags_{name}"] = h.TaskScheduledEvent(101, T0, "act", tags={"value": value})  # type: ignore[dict-item]
        built[f"lock_set_{name}"] = h.EntityLockRequestedEvent(102, T0, "cs", [value], 0)
        built[f"input_{name}"] = h.EventRaisedEvent(103, T0, "e", value)
        built[f"timestamp_{name}"] = h.OrchestratorStartedEvent(104, value)
    return built


def _mutate(value: Any) -> bool:
    """Change one mutable value inside ``value`` in place; ``False`` when there is nothing mutable."""
    if isinstance(value, dict):
        for item in value.values():
            if _mutate(item):
                return True
        value["__mutated__"] = 1
        return True
    if isinstance(value, list):
        for item in value:
            if _mutate(item):
                return True
        value.append("__mutated__")
        return True
    if isinstance(value, tuple):
        return any(_mutate(item) for item in value)
    if isinstance(value, set):
        value.add("__mutated__")
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_mutate(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def _shared(event: history.HistoryEvent) -> dict[str, bool]:
    """Whether changing the result changes the event, and whether changing the event changes a fresh result."""
    before = json.dumps(describe(event))
    result = event.to_dict()
    _mutate(result)
    result_to_event = json.dumps(describe(event)) != before
    result = event.to_dict()
    snapshot = json.dumps(describe(result))
    _mutate(event)
    event_to_result = json.dumps(describe(result)) != snapshot
    return {"result_to_event": result_to_event, "event_to_result": event_to_result}


def probe_to_dict() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, event in events().items():
        try:
            out[name] = {"dict": describe(event.to_dict()), "module_level": describe(history.to_dict(event))}
        except Exception as exc:  # both SDKs are compared on the error too
            out[name] = {"error": [type(exc).__name__, str(exc)]}
            continue
        out[name]["shared"] = _shared(events()[name])
        out[name]["json"] = _json_or_error(event.to_dict())
    return out


def _json_or_error(value: Any) -> Any:
    try:
        return json.dumps(value, sort_keys=True)
    except TypeError as exc:
        return ["TypeError", str(exc)]


def _ts(when: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(when)
    return stamp


def _s(text: str) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=text)


def _wire_failure() -> Any:
    inner = pb.TaskFailureDetails(errorType="KeyError", errorMessage="inner", isNonRetriable=True)
    return pb.TaskFailureDetails(
        errorType="ValueError", errorMessage="outer", stackTrace=_s("tb"), innerFailure=inner
    )


def _full_messages() -> dict[str, Any]:
    """Every event kind with each of its fields set."""
    trace = pb.TraceContext(traceParent="00-a-b-01", spanID="b", traceState=_s("k=v"))
    instance = pb.OrchestrationInstance(instanceId="parent", executionId=_s("e1"))
    parent = pb.ParentInstanceInfo(taskScheduledId=4, name=_s("p"), version=_s("1"), orchestrationInstance=instance)
    return {
        "executionStarted": pb.ExecutionStartedEvent(
            name="orch", version=_s("2"), input=_s('"i"'), orchestrationInstance=instance, parentInstance=parent,
            scheduledStartTimestamp=_ts(T0), parentTraceContext=trace, orchestrationSpanID=_s("span"),
            tags={"team": "ops"},
        ),
        "executionCompleted": pb.ExecutionCompletedEvent(
            orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED, result=_s('"r"'), failureDetails=_wire_failure()
        ),
        "executionTerminated": pb.ExecutionTerminatedEvent(input=_s('"t"'), recurse=True),
        "taskScheduled": pb.TaskScheduledEvent(
            name="act", version=_s("1"), input=_s("3"), parentTraceContext=trace, tags={"a": "b"}
        ),
        "taskCompleted": pb.TaskCompletedEvent(taskScheduledId=2, result=_s("4")),
        "taskFailed": pb.TaskFailedEvent(taskScheduledId=2, failureDetails=_wire_failure()),
        "subOrchestrationInstanceCreated": pb.SubOrchestrationInstanceCreatedEvent(
            instanceId="child", name="sub", version=_s("1"), input=_s("1"), parentTraceContext=trace, tags={"x": "y"}
        ),
        "subOrchestrationInstanceCompleted": pb.SubOrchestrationInstanceCompletedEvent(
            taskScheduledId=5, result=_s("1")
        ),
        "subOrchestrationInstanceFailed": pb.SubOrchestrationInstanceFailedEvent(
            taskScheduledId=5, failureDetails=_wire_failure()
        ),
        "timerCreated": pb.TimerCreatedEvent(fireAt=_ts(T0)),
        "timerFired": pb.TimerFiredEvent(fireAt=_ts(T0), timerId=6),
        "orchestratorStarted": pb.OrchestratorStartedEvent(),
        "orchestratorCompleted": pb.OrchestratorCompletedEvent(),
        "eventSent": pb.EventSentEvent(instanceId="other", name="go", input=_s('"x"')),
        "eventRaised": pb.EventRaisedEvent(name="go", input=_s('"x"')),
        "genericEvent": pb.GenericEvent(data=_s("d")),
        "historyState": pb.HistoryStateEvent(
            orchestrationState=pb.OrchestrationState(
                instanceId="x", name="orch", orchestrationStatus=pb.ORCHESTRATION_STATUS_RUNNING,
                createdTimestamp=_ts(T0), input=_s("1"), tags={"a": "b"}, failureDetails=_wire_failure(),
            )
        ),
        "continueAsNew": pb.ContinueAsNewEvent(input=_s("2")),
        "executionSuspended": pb.ExecutionSuspendedEvent(input=_s('"s"')),
        "executionResumed": pb.ExecutionResumedEvent(input=_s('"r"')),
        "entityOperationSignaled": pb.EntityOperationSignaledEvent(
            requestId="r", operation="add", scheduledTime=_ts(T0), input=_s("1"), targetInstanceId=_s("@c@k")
        ),
        "entityOperationCalled": pb.EntityOperationCalledEvent(
            requestId="r", operation="get", scheduledTime=_ts(T0), input=_s("1"), parentInstanceId=_s("p"),
            parentExecutionId=_s("pe"), targetInstanceId=_s("@c@k"),
        ),
        "entityOperationCompleted": pb.EntityOperationCompletedEvent(requestId="r", output=_s("5")),
        "entityOperationFailed": pb.EntityOperationFailedEvent(requestId="r", failureDetails=_wire_failure()),
        "entityLockRequested": pb.EntityLockRequestedEvent(
            criticalSectionId="cs", lockSet=["@a@1", "@b@2"], position=1, parentInstanceId=_s("p")
        ),
        "entityLockGranted": pb.EntityLockGrantedEvent(criticalSectionId="cs"),
        "entityUnlockSent": pb.EntityUnlockSentEvent(
            criticalSectionId="cs", parentInstanceId=_s("p"), targetInstanceId=_s("@a@1")
        ),
        "executionRewound": pb.ExecutionRewoundEvent(
            reason=_s("why"), parentExecutionId=_s("pe"), instanceId=_s("id"), parentTraceContext=trace,
            name=_s("orch"), version=_s("1"), input=_s("1"), parentInstance=parent, tags={"k": "v"},
        ),
    }


def wire_events() -> dict[str, Any]:
    """Wire events: every kind fully set and empty, and the legacy shapes older backends and the Durable
    Functions extension write (entity calls as ``eventSent``/``eventRaised``, empty strings, no timestamp)."""
    out: dict[str, Any] = {}
    for kind, message in _full_messages().items():
        out[f"{kind}_full"] = pb.HistoryEvent(eventId=7, timestamp=_ts(T0), **{kind: message})
        out[f"{kind}_empty"] = pb.HistoryEvent(**{kind: type(message)()})
    request = json.dumps({"op": "add", "id": "req-1", "input": "1", "parent": "orch-1"})
    out["legacy_entity_call"] = pb.HistoryEvent(
        eventId=3, timestamp=_ts(T0), eventSent=pb.EventSentEvent(instanceId="@counter@k", name="op", input=_s(request))
    )
    response = json.dumps({"result": "5", "exceptionType": None})
    out["legacy_entity_response"] = pb.HistoryEvent(
        eventId=-1, timestamp=_ts(T0), eventRaised=pb.EventRaisedEvent(name="req-1", input=_s(response))
    )
    out["empty_strings"] = pb.HistoryEvent(
        eventId=0, timestamp=_ts(T0), taskScheduled=pb.TaskScheduledEvent(name="", version=_s(""), input=_s(""))
    )
    out["negative_id"] = pb.HistoryEvent(eventId=-1, timestamp=_ts(T0), eventRaised=pb.EventRaisedEvent(name="e"))
    out["pre_epoch"] = pb.HistoryEvent(
        eventId=1, timestamp=_ts(datetime(1960, 1, 1, tzinfo=timezone.utc)), orchestratorStarted={}
    )
    out["no_event_type"] = pb.HistoryEvent(eventId=9, timestamp=_ts(T0))
    return out


def _reader() -> Any:
    try:
        from durabletask._grpc.convert import history_event_from_pb
    except ImportError:  # Microsoft's SDK
        return history._from_protobuf  # type: ignore[attr-defined]
    return history_event_from_pb


def probe_from_wire() -> dict[str, Any]:
    read = _reader()
    out: dict[str, Any] = {}
    for name, message in wire_events().items():
        # Each SDK parses the bytes with its own protobuf module, as it would a message off the wire.
        message = pb.HistoryEvent.FromString(message.SerializeToString())
        try:
            event = read(message)
        except Exception as exc:
            out[name] = {"error": {"type": type(exc).__name__, "value_error": isinstance(exc, ValueError)}}
            continue
        fields = {f.name: describe(getattr(event, f.name)) for f in dataclasses.fields(event)}
        out[name] = {"type": type(event).__name__, "fields": fields, "dict": describe(event.to_dict())}
    return out


if __name__ == "__main__":
    probes = {"to_dict": probe_to_dict, "from_wire": probe_from_wire}
    print(json.dumps(probes[sys.argv[1]]()))
