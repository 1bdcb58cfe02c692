"""A fluent builder for orchestration histories, and helpers to run the executor on them."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._replay.executor import ExecutionResults, OrchestrationExecutor

T0 = datetime(2025, 1, 1, 12, 0, 0)
INSTANCE = "abc123"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def failure(message: str = "boom", error_type: str = "builtins.ValueError", *,
            non_retriable: bool = False) -> pb.TaskFailureDetails:
    return pb.TaskFailureDetails(errorType=error_type, errorMessage=message, isNonRetriable=non_retriable)


class History:
    """Events before :meth:`new` are the past (replayed); the ones after are new in this episode."""

    def __init__(self, instance_id: str = INSTANCE) -> None:
        self.instance_id = instance_id
        self.old: list[pb.HistoryEvent] = []
        self.new_events: list[pb.HistoryEvent] = []
        self._target = self.old
        self._now = T0

    # -- plumbing ----------------------------------------------------------------------------
    def _add(self, event_id: int = -1, **kind: Any) -> History:
        event = pb.HistoryEvent(eventId=event_id, **kind)
        event.timestamp.FromDatetime(self._now)
        self._target.append(event)
        return self

    def new(self) -> History:
        """Everything added from now on is a new event of the current episode."""
        self._target = self.new_events
        return self

    def commit(self) -> History:
        """The current episode is over: its new events become past, and later events are past too."""
        self.old.extend(self.new_events)
        self.new_events = []
        self._target = self.old
        return self

    @property
    def all(self) -> list[pb.HistoryEvent]:
        return self.old + self.new_events

    # -- events ------------------------------------------------------------------------------
    def orchestrator_started(self, at: datetime | None = None) -> History:
        self._now = at if at is not None else self._now + timedelta(seconds=1)
        return self._add(orchestratorStarted=pb.OrchestratorStartedEvent())

    def orchestrator_completed(self) -> History:
        return self._add(orchestratorCompleted=pb.OrchestratorCompletedEvent())

    def started(self, name: str, input: Any = None, *, version: str | None = None,
                parent: str | None = None, at: datetime | None = None, raw_input: str | None = None,
                execution_id: str | None = None) -> History:
        self.orchestrator_started(at or T0)
        started = pb.ExecutionStartedEvent(
            name=name, orchestrationInstance=pb.OrchestrationInstance(instanceId=self.instance_id))
        if execution_id is not None:
            started.orchestrationInstance.executionId.value = execution_id
        encoded = raw_input if raw_input is not None else _json(input)
        if encoded is not None:
            started.input.value = encoded
        if version is not None:
            started.version.value = version
        if parent is not None:
            started.parentInstance.orchestrationInstance.instanceId = parent
            started.parentInstance.taskScheduledId = 0
        return self._add(executionStarted=started)

    def task_scheduled(self, event_id: int, name: str, input: Any = None) -> History:
        scheduled = pb.TaskScheduledEvent(name=name)
        if input is not None:
            scheduled.input.value = _json(input) or ""
        return self._add(event_id, taskScheduled=scheduled)

    def task_completed(self, task_id: int, result: Any = None, *, raw: str | None = None) -> History:
        done = pb.TaskCompletedEvent(taskScheduledId=task_id)
        encoded = raw if raw is not None else _json(result)
        if encoded is not None:
            done.result.value = encoded
        return self._add(taskCompleted=done)

    def task_failed(self, task_id: int, details: pb.TaskFailureDetails | None = None) -> History:
        return self._add(taskFailed=pb.TaskFailedEvent(taskScheduledId=task_id, failureDetails=details or failure()))

    def sub_created(self, event_id: int, name: str, instance_id: str = "child") -> History:
        return self._add(event_id, subOrchestrationInstanceCreated=pb.SubOrchestrationInstanceCreatedEvent(
            name=name, instanceId=instance_id))

    def sub_completed(self, task_id: int, result: Any = None) -> History:
        done = pb.SubOrchestrationInstanceCompletedEvent(taskScheduledId=task_id)
        if result is not None:
            done.result.value = _json(result) or ""
        return self._add(subOrchestrationInstanceCompleted=done)

    def sub_failed(self, task_id: int, details: pb.TaskFailureDetails | None = None) -> History:
        return self._add(subOrchestrationInstanceFailed=pb.SubOrchestrationInstanceFailedEvent(
            taskScheduledId=task_id, failureDetails=details or failure()))

    def timer_created(self, event_id: int, fire_at: datetime) -> History:
        created = pb.TimerCreatedEvent()
        created.fireAt.FromDatetime(fire_at)
        return self._add(event_id, timerCreated=created)

    def timer_fired(self, timer_id: int, fire_at: datetime) -> History:
        fired = pb.TimerFiredEvent(timerId=timer_id)
        fired.fireAt.FromDatetime(fire_at)
        return self._add(timerFired=fired)

    def event_sent(self, event_id: int, instance_id: str, name: str, data: Any = None) -> History:
        sent = pb.EventSentEvent(instanceId=instance_id, name=name)
        if data is not None:
            sent.input.value = _json(data) or ""
        return self._add(event_id, eventSent=sent)

    def event_raised(self, name: str, data: Any = None) -> History:
        raised = pb.EventRaisedEvent(name=name)
        if data is not None:
            raised.input.value = _json(data) or ""
        return self._add(eventRaised=raised)

    def suspended(self) -> History:
        return self._add(executionSuspended=pb.ExecutionSuspendedEvent())

    def resumed(self) -> History:
        return self._add(executionResumed=pb.ExecutionResumedEvent())

    def terminated(self, output: Any = None) -> History:
        terminated = pb.ExecutionTerminatedEvent()
        if output is not None:
            terminated.input.value = _json(output) or ""
        return self._add(executionTerminated=terminated)

    def execution_completed(self, status: pb.OrchestrationStatus = pb.ORCHESTRATION_STATUS_FAILED,
                            details: pb.TaskFailureDetails | None = None) -> History:
        done = pb.ExecutionCompletedEvent(orchestrationStatus=status)
        if status == pb.ORCHESTRATION_STATUS_FAILED:
            done.failureDetails.CopyFrom(details or failure())
        return self._add(executionCompleted=done)

    def rewound(self, reason: str | None = None, *, parent_execution_id: str | None = None) -> History:
        rewound = pb.ExecutionRewoundEvent()
        if reason is not None:
            rewound.reason.value = reason
        if parent_execution_id is not None:
            rewound.parentExecutionId.value = parent_execution_id
        return self._add(executionRewound=rewound)

    # -- entity events (sequence-numbered messages are recorded from the actions that sent them) --
    def entity_message(self, event_id: int, message: pb.SendEntityMessageAction) -> History:
        kind = message.WhichOneof("EntityMessageType")
        assert kind is not None, "an entity message needs a kind"
        return self._add(event_id, **{kind: getattr(message, kind)})

    def entity_completed(self, request_id: str, result: Any = None) -> History:
        done = pb.EntityOperationCompletedEvent(requestId=request_id)
        if result is not None:
            done.output.value = _json(result) or ""
        return self._add(entityOperationCompleted=done)

    def entity_failed(self, request_id: str, details: pb.TaskFailureDetails | None = None) -> History:
        return self._add(entityOperationFailed=pb.EntityOperationFailedEvent(
            requestId=request_id, failureDetails=details or failure()))

    def lock_granted(self, section_id: str) -> History:
        return self._add(entityLockGranted=pb.EntityLockGrantedEvent(criticalSectionId=section_id))

    @property
    def now(self) -> datetime:
        return self._now


def registry(*orchestrators: Callable[..., Any], activities: tuple[Callable[..., Any], ...] = ()) -> Registry:
    reg = Registry()
    for fn in orchestrators:
        reg.add_orchestrator(fn)
    for fn in activities:
        reg.add_activity(fn)
    return reg


def run(history: History, *orchestrators: Callable[..., Any], **options: Any) -> ExecutionResults:
    executor = OrchestrationExecutor(registry(*orchestrators), **options)
    return executor.execute(history.instance_id, history.old, history.new_events)


def kinds(result: ExecutionResults) -> list[str]:
    return [str(action.WhichOneof("orchestratorActionType")) for action in result.actions]


def completion(result: ExecutionResults) -> pb.CompleteOrchestrationAction:
    last = result.actions[-1]
    assert last.HasField("completeOrchestration"), f"expected a completion, got {kinds(result)}"
    return last.completeOrchestration


def output(result: ExecutionResults) -> Any:
    done = completion(result)
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, done.failureDetails
    return json.loads(done.result.value) if done.HasField("result") else None


def failed_with(result: ExecutionResults) -> pb.TaskFailureDetails:
    done = completion(result)
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED, done
    return done.failureDetails
