"""Turning what a closely watched replay saw into a :class:`Divergence`: the sequence ID, the recorded call, the
current call and the user's line that made it."""

from __future__ import annotations

from collections.abc import Sequence

from durabletask._errors import ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import nondeterminism
from durabletask._replay.failures import NonDeterminismError, qualified_name
from durabletask._replay_check.callsites import CallSites, raised_at
from durabletask._replay_check.probe import SCHEDULING_KINDS, Failure
from durabletask._replay_check.report import Divergence, DivergenceKind

_PROTOCOL_ERROR = qualified_name(ProtocolError)
_STATUS_PREFIX = "ORCHESTRATION_STATUS_"


def status_name(status: int) -> str:
    """``completed``, ``continued_as_new``... for a wire orchestration status."""
    return pb.OrchestrationStatus.Name(status).removeprefix(_STATUS_PREFIX).lower()


def recorded_call(kind: str, event: pb.HistoryEvent) -> str:
    """How a recorded scheduling event reads as the call that made it."""
    if not kind.startswith("entity"):
        return nondeterminism.recorded_call(kind, event)
    message = getattr(event, kind)
    if kind == "entityLockRequested":
        return f"lock_entities({list(message.lockSet)!r})"
    if kind == "entityUnlockSent":
        return f"the release of the lock on {message.targetInstanceId.value!r}"
    method = "call_entity" if kind == "entityOperationCalled" else "signal_entity"
    return f"{method}({message.targetInstanceId.value!r}, {message.operation!r})"


def action_call(action: pb.OrchestratorAction) -> str:
    """How an orchestrator action reads as the call (or ending) that produced it."""
    kind = action.WhichOneof("orchestratorActionType")
    if kind == "scheduleTask":
        return f"call_activity({action.scheduleTask.name!r})"
    if kind == "createSubOrchestration":
        return f"call_sub_orchestrator({action.createSubOrchestration.name!r})"
    if kind == "createTimer":
        return "create_timer()"
    if kind == "sendEvent":
        return f"send_event({action.sendEvent.instance.instanceId!r}, {action.sendEvent.name!r})"
    if kind == "sendEntityMessage":
        entity = action.sendEntityMessage
        return f"an entity message ({entity.WhichOneof('EntityMessageType')})"
    if kind == "completeOrchestration":
        return f"the end of the execution ({status_name(action.completeOrchestration.orchestrationStatus)})"
    return str(kind)


def from_failure(failure: Failure | None, sites: CallSites, details: pb.TaskFailureDetails) -> Divergence:
    """The divergence behind a replay that failed: a mismatch at a sequence ID, or an error the code raised."""
    if failure is not None and isinstance(failure.error, NonDeterminismError) and failure.kind in SCHEDULING_KINDS:
        return _mismatch(failure, sites)
    if failure is not None:
        error = failure.error
        if isinstance(error, ProtocolError):
            return Divergence(DivergenceKind.HISTORY, f"the history cannot be replayed: {error}")
        return Divergence(
            DivergenceKind.ERROR,
            f"the current code raises {type(error).__name__} while replaying: {error}",
            location=raised_at(error) or sites.waiting,
        )
    # Failed outside every handler: the executor's own checks (a history without its start event, say).
    kind = DivergenceKind.HISTORY if details.errorType == _PROTOCOL_ERROR else DivergenceKind.ERROR
    return Divergence(kind, f"the replay fails: {details.errorType}: {details.errorMessage}")


def _mismatch(failure: Failure, sites: CallSites) -> Divergence:
    event, action = failure.event, failure.action
    recorded = recorded_call(failure.kind, event)
    current = action.describe() if action is not None else None
    now = f"calls {current}" if current is not None else "makes no call"
    location = sites.calls.get(action.id) if action is not None else sites.waiting
    if action is None and location is not None:
        now += f" there (it waits at line {location.line})"
    return Divergence(
        DivergenceKind.NONDETERMINISM,
        f"history records {recorded} with ID {event.eventId}, but the current code {now} with that ID",
        sequence_id=event.eventId,
        recorded=recorded,
        current=current,
        location=location,
    )


def from_ending(
    ending: pb.ExecutionCompletedEvent, actions: Sequence[pb.OrchestratorAction], sites: CallSites
) -> Divergence:
    """The divergence of a history that records the end of its execution where the current code does not end."""
    recorded = f"the end of the execution ({status_name(ending.orchestrationStatus)})"
    calls = [a for a in actions if not a.HasField("completeOrchestration")]
    if calls:
        first = min(calls, key=lambda a: a.id)
        call = action_call(first)
        return Divergence(
            DivergenceKind.OUTCOME,
            f"history records {recorded}, but the current code then calls {call} (ID {first.id})",
            sequence_id=first.id,
            recorded=recorded,
            current=call,
            location=sites.calls.get(first.id),
        )
    ended = [a for a in actions if a.HasField("completeOrchestration")]
    current: str | None = None
    if ended:
        current = action_call(ended[-1])
        message = f"history records {recorded}, but the current code reaches {current}"
    else:
        message = f"history records {recorded}, but the current code is still waiting"
    return Divergence(DivergenceKind.OUTCOME, message, recorded=recorded, current=current, location=sites.waiting)
