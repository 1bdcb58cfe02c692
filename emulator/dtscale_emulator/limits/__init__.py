"""Request checks: the configurable limits, orchestrator and entity results against them, reuse policies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.limits.rules import (
    MIB,
    EntityIdTooLongError,
    FieldLimits,
    FieldTooLargeError,
    PayloadTooLargeError,
    RefusedContentError,
    TimestampOutOfRangeError,
    TooManyActionsError,
)
from dtscale_emulator.protocol import pb

#: Actions one orchestrator turn may carry: Durable Functions' documented default for its own cap
#: (``maxOrchestrationActions``, 100,000); DTS documents none.
MAX_ACTIONS_PER_TURN = 100_000

__all__ = [
    "MIB",
    "EntityIdTooLongError",
    "FieldTooLargeError",
    "Limits",
    "PayloadTooLargeError",
    "RefusedContentError",
    "TimestampOutOfRangeError",
    "TooManyActionsError",
    "reuse_policy",
]


@dataclass(frozen=True)
class Limits(FieldLimits):
    """Configurable limits; the defaults match the managed service's documented limits where it has any."""

    max_history_events: int | None = None
    max_actions_per_turn: int = MAX_ACTIONS_PER_TURN

    def orchestrator_response(self, response: pb.OrchestratorResponse) -> None:
        """Checks every field an orchestrator's actions carry before anything is applied.

        Args:
            response: The ``CompleteOrchestratorTask`` request.

        Raises:
            InvalidArgumentError: the response is malformed (it keeps its lease).
            RefusedContentError: a field is over a limit (the turn fails the orchestration).
        """
        if len(response.actions) > self.max_actions_per_turn:
            raise TooManyActionsError(
                f"actions holds {len(response.actions)} actions; the limit is {self.max_actions_per_turn} per turn"
            )
        if response.HasField("customStatus"):
            self.payload("customStatus", response.customStatus.value)
        if response.HasField("orchestrationTraceContext"):
            # Stored with the instance and sent in each of its work items.
            self.message(response.orchestrationTraceContext, "orchestrationTraceContext")
        for action in response.actions:
            kind = action.WhichOneof("orchestratorActionType")
            if kind is None:
                raise InvalidArgumentError(f"actions[{action.id}] sets no action kind (e.g. scheduleTask)")
            body = getattr(action, kind)
            path = f"actions[{action.id}].{kind}"
            if kind == "rewindOrchestration":
                _check_rewound_history(path, body)
            if kind == "completeOrchestration" and body.orchestrationStatus not in _FINAL_STATUSES:
                status = body.orchestrationStatus
                name = pb.OrchestrationStatus.Name(status) if status in pb.OrchestrationStatus.values() else status
                allowed = ", ".join(pb.OrchestrationStatus.Name(s) for s in _FINAL_STATUSES)
                raise InvalidArgumentError(f"{path}.orchestrationStatus must be one of {allowed}, not {name}")
            if kind == "sendEntityMessage":
                inner = body.WhichOneof("EntityMessageType")
                if inner is None:
                    continue
                body, path = getattr(body, inner), f"{path}.{inner}"
                self._entity_targets(path, body)
            elif kind == "createSubOrchestration" and body.instanceId:
                self.instance_id(body.instanceId, f"{path}.instanceId")
            self.message(body, path)

    def entity_batch_result(self, result: pb.EntityBatchResult) -> None:
        """Checks the entity IDs and fields an entity's results and actions carry before anything is applied.

        Args:
            result: The ``CompleteEntityTask`` request.

        Raises:
            InvalidArgumentError: an entity or instance ID is malformed.
            RefusedContentError: a field is over a limit.
        """
        for action in result.actions:
            if action.HasField("sendSignal"):
                self.entity_id(action.sendSignal.instanceId, f"actions[{action.id}].sendSignal.instanceId")
            elif action.HasField("startNewOrchestration") and action.startNewOrchestration.instanceId:
                start = action.startNewOrchestration
                self.instance_id(start.instanceId, f"actions[{action.id}].startNewOrchestration.instanceId")
        self.message(result)

    def activity_response(self, response: pb.ActivityResponse) -> None:
        """Checks an activity's failure details (its result is a payload the dispatcher checks itself).

        Args:
            response: The ``CompleteActivityTask`` request.

        Raises:
            RefusedContentError: the failure details are over a limit.
        """
        if response.HasField("failureDetails"):
            self.failure("failureDetails", response.failureDetails)

    def _entity_targets(self, path: str, message: Any) -> None:
        if "targetInstanceId" in message.DESCRIPTOR.fields_by_name:
            self.entity_id(message.targetInstanceId.value, f"{path}.targetInstanceId")


#: Statuses of an instance that has not finished: replacing one terminates it before the new one starts.
_UNFINISHED = (pb.ORCHESTRATION_STATUS_RUNNING, pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_SUSPENDED)


def reuse_policy(replaceable: Sequence[int], field: str = "orchestrationIdReusePolicy.replaceableStatus") -> None:
    """Rejects reuse policies DTS rejects: unknown statuses, and unfinished statuses without TERMINATED.

    Replacing an unfinished instance terminates it first, so a policy that allows that but keeps a terminated
    instance from being replaced contradicts itself; DTS refuses it with the message used here.
    """
    unknown = [s for s in replaceable if s not in pb.OrchestrationStatus.values()]
    if unknown:
        raise InvalidArgumentError(f"{field} holds {unknown}, which are not orchestration statuses")
    unfinished = [pb.OrchestrationStatus.Name(s) for s in _UNFINISHED if s in replaceable]
    if unfinished and pb.ORCHESTRATION_STATUS_TERMINATED not in replaceable:
        raise InvalidArgumentError(
            "Invalid reusable statuses: cannot exclude 'Terminated' while also allowing reuse of running instances "
            f"({field} lists {', '.join(unfinished)} but not ORCHESTRATION_STATUS_TERMINATED)"
        )


#: The statuses an orchestration can end a turn with (continue-as-new starts the next execution).
_FINAL_STATUSES = (
    pb.ORCHESTRATION_STATUS_COMPLETED,
    pb.ORCHESTRATION_STATUS_FAILED,
    pb.ORCHESTRATION_STATUS_TERMINATED,
    pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW,
)


def _check_rewound_history(path: str, action: pb.RewindOrchestrationAction) -> None:
    """A rewound history replaces the stored one, so it must still start the orchestration exactly once."""
    started = sum(1 for event in action.newHistory if event.HasField("executionStarted"))
    if started != 1:
        raise InvalidArgumentError(
            f"{path}.newHistory must contain exactly one executionStarted event, found {started}"
        )
