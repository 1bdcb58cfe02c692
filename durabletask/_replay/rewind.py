"""Rewinding a failed orchestration: the history rewrite a worker returns instead of running the orchestrator."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from durabletask._errors import ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb

#: Seeds the derived execution IDs, so the same rewind request always yields the same new history.
_EXECUTION_ID_NAMESPACE = uuid.UUID("5b0e6c1e-3f5d-4b8e-9a57-6d1f0c2a9e41")

_FAILURES = frozenset({"taskFailed", "subOrchestrationInstanceFailed"})
#: Calls whose scheduling event is dropped when nothing in the history answers it.
_REISSUABLE = frozenset({"taskScheduled", "timerCreated"})


def is_rewind_request(old_events: Sequence[pb.HistoryEvent], new_events: Sequence[pb.HistoryEvent]) -> bool:
    """Whether a work item asks for a rewind rather than an ordinary episode.

    Once the backend has installed the rewritten history its executionCompleted event is gone, so a later
    work item that still carries executionRewound is an ordinary replay.
    """
    # Asked of every work item: a plain loop over the few new events, with no generator to build each time.
    for event in new_events:
        if event.HasField("executionRewound"):
            return any(e.HasField("executionCompleted") for e in old_events)
    return False


def rewind_action(
    instance_id: str, old_events: Sequence[pb.HistoryEvent], new_events: Sequence[pb.HistoryEvent]
) -> pb.OrchestratorAction:
    """The single action that answers a rewind request: the history the backend should store instead.

    Raises:
        ProtocolError: The request is not ``[orchestratorStarted, executionRewound]`` after a failed execution.
    """
    rewound = _check_request(instance_id, old_events, new_events)
    started = next((e for e in old_events if e.HasField("executionStarted")), None)
    if started is None:
        raise ProtocolError(f"cannot rewind orchestration '{instance_id}': its history has no executionStarted event")
    execution_id = new_execution_id(instance_id, started.executionStarted, new_events[1])
    history = rewrite_history([*old_events, *new_events], rewound, execution_id)
    return pb.OrchestratorAction(id=-1, rewindOrchestration=pb.RewindOrchestrationAction(newHistory=history))


def _check_request(
    instance_id: str, old_events: Sequence[pb.HistoryEvent], new_events: Sequence[pb.HistoryEvent]
) -> pb.ExecutionRewoundEvent:
    shape = [e.WhichOneof("eventType") for e in new_events]
    if shape != ["orchestratorStarted", "executionRewound"]:
        raise ProtocolError(
            f"a rewind of orchestration '{instance_id}' must deliver exactly orchestratorStarted and "
            f"executionRewound as new events, got {shape}"
        )
    completed = [e.executionCompleted for e in old_events if e.HasField("executionCompleted")]
    if not completed:
        raise ProtocolError(f"cannot rewind orchestration '{instance_id}': its history has not ended")
    status = completed[-1].orchestrationStatus
    if status != pb.ORCHESTRATION_STATUS_FAILED:
        raise ProtocolError(
            f"only failed orchestrations can be rewound; '{instance_id}' ended {pb.OrchestrationStatus.Name(status)}"
        )
    return new_events[1].executionRewound


def new_execution_id(instance_id: str, started: pb.ExecutionStartedEvent, rewound: pb.HistoryEvent) -> str:
    """The rewound execution's ID, derived from the failed execution and the rewind event.

    Deriving it (rather than drawing a random one) keeps the executor free of hidden inputs: a worker that
    crashes and receives the same rewind request again answers with the same history.
    """
    previous = started.orchestrationInstance.executionId.value
    when = rewound.timestamp.ToJsonString() if rewound.HasField("timestamp") else ""
    return uuid.uuid5(_EXECUTION_ID_NAMESPACE, "\n".join((instance_id, previous, when))).hex


def rewrite_history(
    events: Sequence[pb.HistoryEvent], rewound: pb.ExecutionRewoundEvent, execution_id: str
) -> list[pb.HistoryEvent]:
    """The history with the failed work taken out, so that a replay schedules exactly that work again.

    Removed: the executionCompleted event; every failure that reached the orchestrator (a failure a retry
    policy absorbed stays, with its retry timer, so replay retries the same way and only the last attempt
    runs again); and every ``taskScheduled``/``timerCreated`` left with nothing answering it (the failed
    calls, and calls still in flight when the execution ended, whose results the backend discards). Replay
    gives those calls the same sequence IDs and sends them again. ``subOrchestrationInstanceCreated`` always
    stays: the backend rewinds or re-creates that child itself. Everything else is kept, executionRewound
    included, and executionStarted gets ``execution_id`` (and the parent's new execution ID, for a child).
    """
    final = final_failures(events)
    answered: set[int] = set()
    for position, scheduled_at in _answers(events):
        kind = events[position].WhichOneof("eventType")
        if kind in ("taskCompleted", "timerFired") or (kind == "taskFailed" and position not in final):
            answered.add(scheduled_at)
    kept: list[pb.HistoryEvent] = []
    for position, e in enumerate(events):
        kind = e.WhichOneof("eventType")
        if kind == "executionCompleted" or position in final or (kind in _REISSUABLE and position not in answered):
            continue
        kept.append(_restarted(e, rewound, execution_id) if kind == "executionStarted" else e)
    return kept


def _restarted(event: pb.HistoryEvent, rewound: pb.ExecutionRewoundEvent, execution_id: str) -> pb.HistoryEvent:
    copy = pb.HistoryEvent()
    copy.CopyFrom(event)
    started = copy.executionStarted
    started.orchestrationInstance.executionId.value = execution_id
    # Only a child has a parent to follow; writing through parentInstance would invent one otherwise.
    if rewound.parentExecutionId.value and started.HasField("parentInstance"):
        started.parentInstance.orchestrationInstance.executionId.value = rewound.parentExecutionId.value
    if rewound.HasField("parentTraceContext"):
        started.parentTraceContext.CopyFrom(rewound.parentTraceContext)
    return copy


def _answered_id(event: pb.HistoryEvent) -> int:
    kind = event.WhichOneof("eventType")
    if kind == "taskCompleted":
        return event.taskCompleted.taskScheduledId
    if kind == "timerFired":
        return event.timerFired.timerId
    if kind == "taskFailed":
        return event.taskFailed.taskScheduledId
    if kind == "subOrchestrationInstanceCompleted":
        return event.subOrchestrationInstanceCompleted.taskScheduledId
    return event.subOrchestrationInstanceFailed.taskScheduledId


_ANSWERS = frozenset({"taskCompleted", "timerFired", "subOrchestrationInstanceCompleted", *_FAILURES})
_SCHEDULES = frozenset({"taskScheduled", "timerCreated", "subOrchestrationInstanceCreated"})


def _answers(events: Sequence[pb.HistoryEvent]) -> Iterable[tuple[int, int]]:
    """(position of a result event, position of the scheduling event it answers), in history order.

    Results are paired by position rather than by ID because every retry attempt of a call reuses the
    first attempt's ID: a result answers the latest call scheduled under its ID before it.
    """
    latest: dict[int, int] = {}
    for position, e in enumerate(events):
        kind = e.WhichOneof("eventType")
        if kind in _SCHEDULES:
            latest[e.eventId] = position
        elif kind in _ANSWERS:
            scheduled_at = latest.get(_answered_id(e))
            if scheduled_at is not None:
                yield position, scheduled_at


def final_failures(events: Sequence[pb.HistoryEvent]) -> set[int]:
    """Positions of the failures that reached the orchestrator, i.e. were not absorbed by a retry."""
    failed = {position for position, e in enumerate(events) if e.WhichOneof("eventType") in _FAILURES}
    return failed - retried_failures(events)


def _signature(event: pb.HistoryEvent) -> tuple[str, ...]:
    """What a retry attempt repeats of the call it retries (trace context and tags may differ)."""
    if event.HasField("taskScheduled"):
        call = event.taskScheduled
        return ("activity", call.name, call.version.value, call.input.value)
    sub = event.subOrchestrationInstanceCreated
    return ("orchestration", sub.name, sub.instanceId, sub.version.value, sub.input.value)


def retried_failures(events: Sequence[pb.HistoryEvent]) -> set[int]:
    """Positions of the failures that a retry policy answered with another attempt.

    A retry shows in the history as: the failure, a timer created in the same episode, and, in the episode
    where that timer fires, a new call with the same signature. A hand-written "wait, then call again"
    reads the same way and is treated the same, which is what a rewind of it should do too.
    """
    failed_call = {
        position: scheduled_at
        for position, scheduled_at in _answers(events)
        if events[position].WhichOneof("eventType") in _FAILURES
    }
    calls: dict[int, tuple[str, ...]] = {}  # position of a call -> its signature
    failed_now: list[int] = []  # failures delivered in the current episode
    timer_candidates: dict[int, list[int]] = {}  # timer ID -> failures it may be the retry delay for
    fired_now: list[list[int]] = []  # candidate lists of retry timers fired in the current episode
    retried: set[int] = set()
    for position, e in enumerate(events):
        kind = e.WhichOneof("eventType")
        if kind == "orchestratorStarted":
            failed_now, fired_now = [], []
        elif kind in _FAILURES:
            failed_now.append(position)
        elif kind == "timerCreated" and failed_now:
            timer_candidates[e.eventId] = list(failed_now)
        elif kind == "timerFired" and e.timerFired.timerId in timer_candidates:
            fired_now.append(timer_candidates.pop(e.timerFired.timerId))
        elif kind in ("taskScheduled", "subOrchestrationInstanceCreated"):
            signature = calls[position] = _signature(e)
            _claim(signature, calls, failed_call, fired_now, retried)
    return retried


def _claim(
    signature: tuple[str, ...],
    calls: dict[int, tuple[str, ...]],
    failed_call: dict[int, int],
    fired_now: list[list[int]],
    retried: set[int],
) -> None:
    """Pairs a new call with a failure it retries, consuming the retry timer that led to it."""
    for index, candidates in enumerate(fired_now):
        for failure in candidates:
            if failure not in retried and calls.get(failed_call.get(failure, -1)) == signature:
                retried.add(failure)
                del fired_now[index]
                return
