"""Request checks: payload sizes, instance and entity ID rules, reuse policies; INVALID_ARGUMENT naming the field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.protocol import pb

MIB = 1024 * 1024


class RefusedContentError(InvalidArgumentError):
    """A completion carries what the emulator cannot store: it fails its work instead of coming back.

    Redelivered, the same work would produce the same refused completion again, forever.
    """

    #: ``errorType`` of the failure recorded in place of the refused completion.
    failure_type = "InvalidArgument"


class PayloadTooLargeError(RefusedContentError):
    """A payload is over the size limit."""

    failure_type = "PayloadTooLarge"


class EntityIdTooLongError(RefusedContentError):
    """An entity ID (``@name@key``) is over the instance ID length limit."""

    failure_type = "EntityIdTooLong"


@dataclass(frozen=True)
class Limits:
    """Configurable limits; the defaults match the managed service's documented limits."""

    max_payload_bytes: int = MIB
    max_instance_id_length: int = 100
    max_history_events: int | None = None

    def instance_id(self, value: str, field: str = "instanceId") -> None:
        """Rejects IDs that are too long, non-printable-ASCII or start with '@' (reserved for entities)."""
        if len(value) > self.max_instance_id_length:
            raise InvalidArgumentError(
                f"{field} is {len(value)} characters; the limit is {self.max_instance_id_length}"
            )
        if not all(" " <= ch <= "~" for ch in value):
            raise InvalidArgumentError(f"{field} must contain only printable ASCII characters")
        if value.startswith("@"):
            raise InvalidArgumentError(f"{field} must not start with '@' (reserved for entity IDs)")

    def entity_id(self, value: str, field: str = "instanceId") -> None:
        """Rejects entity IDs over the limit: DTS applies the instance ID limit to ``@name@key`` as a whole."""
        if len(value) > self.max_instance_id_length:
            raise EntityIdTooLongError(
                f"{field} is {len(value)} characters; the limit is {self.max_instance_id_length} "
                "(for an entity, '@name@key' as a whole)"
            )

    def payload(self, field: str, value: str | None) -> None:
        if value is None:
            return
        size = len(value.encode("utf-8"))
        if size > self.max_payload_bytes:
            raise PayloadTooLargeError(
                f"{field} is {size} bytes; the limit is {self.max_payload_bytes} bytes (larger payloads: give the "
                "client and worker a payload_store=, which stores them externally and sends a token)"
            )

    def orchestrator_response(self, response: pb.OrchestratorResponse) -> None:
        """Checks every payload an orchestrator's actions carry before anything is applied."""
        if response.HasField("customStatus"):
            self.payload("customStatus", response.customStatus.value)
        for action in response.actions:
            kind = action.WhichOneof("orchestratorActionType")
            if kind is None:
                raise InvalidArgumentError(f"actions[{action.id}] sets no action kind (e.g. scheduleTask)")
            body = getattr(action, kind)
            path = f"actions[{action.id}].{kind}"
            if kind == "rewindOrchestration":
                _check_rewound_history(path, body)
                continue
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
            self._fields(path, body)

    def entity_batch_result(self, result: pb.EntityBatchResult) -> None:
        """Checks the entity IDs an entity's operations signal before anything is applied."""
        for action in result.actions:
            if action.HasField("sendSignal"):
                self.entity_id(action.sendSignal.instanceId, f"actions[{action.id}].sendSignal.instanceId")

    def _entity_targets(self, path: str, message: Any) -> None:
        if "targetInstanceId" in message.DESCRIPTOR.fields_by_name:
            self.entity_id(message.targetInstanceId.value, f"{path}.targetInstanceId")
        if "lockSet" in message.DESCRIPTOR.fields_by_name:
            for index, entity in enumerate(message.lockSet):
                self.entity_id(entity, f"{path}.lockSet[{index}]")

    def _fields(self, path: str, body: Any) -> None:
        for name in ("input", "result", "data"):
            if name in body.DESCRIPTOR.fields_by_name and body.HasField(name):
                self.payload(f"{path}.{name}", getattr(body, name).value)


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
