"""What an entity operation sees: its entity, the operation and input, the state, and messages to send."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, overload

from durabletask._codec import Codec
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities._state import StateShim
from durabletask.entities.entity_instance_id import EntityInstanceId

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

__all__ = ["EntityContext", "StateShim"]

TState = TypeVar("TState")


def to_entity_id(value: EntityInstanceId | str) -> EntityInstanceId:
    """An :class:`EntityInstanceId` from itself or its ``@name@key`` text."""
    if isinstance(value, EntityInstanceId):
        return value
    if isinstance(value, str):
        return EntityInstanceId.parse(value)
    raise TypeError(f"an entity is identified by an EntityInstanceId or an '@name@key' string, not {value!r}")


class EntityContext:
    """The context of one entity operation.

    State changes and the messages an operation sends take effect only if the operation succeeds;
    an operation that raises leaves the state as it was before it.
    """

    def __init__(
        self,
        orchestration_id: str,
        operation: str,
        state: StateShim,
        entity_id: EntityInstanceId,
        data_converter: DataConverter | None = None,
        *,
        codec: Codec | None = None,
        encoded_input: str | None = None,
        input: Any = None,
    ) -> None:
        # The positional parameters are Microsoft's; the worker passes its codec and the operation's input.
        self._orchestration_id = orchestration_id
        self._entity_id = entity_id
        self._operation = operation
        self._state = state
        self._codec = codec if codec is not None else Codec(data_converter)
        self._encoded_input = encoded_input
        self._input = input

    @property
    def entity_id(self) -> EntityInstanceId:
        """The entity this operation runs on."""
        return self._entity_id

    @property
    def orchestration_id(self) -> str:
        """The instance ID of the batch running this operation: the entity's, in ``@name@key`` form (the name
        is kept from the compatible API)."""
        return self._orchestration_id

    @property
    def operation(self) -> str:
        """The name of the operation being run."""
        return self._operation

    @property
    def input(self) -> Any:
        """The operation's input, decoded (``None`` when it has none)."""
        return self._input

    def get_input(self, intended_type: type[TState] | None = None) -> Any:
        """The operation's input, decoded as ``intended_type`` when given.

        Args:
            intended_type: A class to rebuild the decoded input as; ``None`` returns the decoded JSON value.
        """
        if intended_type is None:
            return self._input
        return self._codec.decode(self._encoded_input, intended_type)

    @property
    def has_state(self) -> bool:
        """Whether the entity currently has a state."""
        return self._state.exists

    @overload
    def get_state(self, intended_type: type[TState], default: TState) -> TState: ...
    @overload
    def get_state(self, intended_type: type[TState]) -> TState | None: ...
    @overload
    def get_state(self, intended_type: None = None, default: Any = None) -> Any: ...
    def get_state(self, intended_type: Any = None, default: Any = None) -> Any:
        """The entity's state (a fresh copy), or ``default`` when it has none.

        Args:
            intended_type: A class to rebuild the state as; ``None`` returns the decoded JSON value.
            default: Returned when the entity has no state.

        Raises:
            TypeError: The state cannot be read as ``intended_type``.
        """
        return self._state.get_state(intended_type, default)

    def set_state(self, new_state: Any) -> None:
        """Replace the entity's state; ``None`` deletes it.

        Args:
            new_state: The state to keep; serialized now, so an unserializable value fails this operation.
        """
        self._state.set_state(new_state)

    def delete_state(self) -> None:
        """Delete the entity's state (an entity without state and without pending work disappears)."""
        self._state.set_state(None)

    def signal_entity(
        self,
        entity_instance_id: EntityInstanceId | str,
        operation: str,
        input: Any | None = None,
        signal_time: datetime | None = None,
    ) -> None:
        """Send a one-way operation to an entity (this one included), optionally not before ``signal_time``.

        Args:
            entity_instance_id: The target entity, as an ID or its ``@name@key`` string.
            operation: The operation name to call on it.
            input: The operation's input (serialized now).
            signal_time: Deliver the signal no earlier than this time; at once when ``None``.

        Raises:
            ValueError: ``operation`` is empty or ``entity_instance_id`` is not a valid entity ID.
        """
        target = to_entity_id(entity_instance_id)
        if not operation:
            raise ValueError("the operation name cannot be empty")
        signal = pb.SendSignalAction(instanceId=str(target), name=operation)
        encoded = self._codec.encode(input, "input of operation '{}'", operation)
        if encoded is not None:
            signal.input.value = encoded
        if signal_time is not None:
            signal.scheduledTime.FromDatetime(signal_time)
        self._state.add_operation_action(pb.OperationAction(sendSignal=signal))

    def schedule_new_orchestration(
        self, orchestration_name: str, input: Any | None = None, instance_id: str | None = None
    ) -> str:
        """Start an orchestration once this operation succeeds; returns its instance ID.

        Args:
            orchestration_name: The registered name of the orchestrator to start.
            input: The orchestration's input.
            instance_id: The new instance's ID; a random one when ``None``.

        Raises:
            ValueError: ``orchestration_name`` is empty.
        """
        if not orchestration_name:
            raise ValueError("the orchestration name cannot be empty")
        new_id = instance_id or uuid.uuid4().hex
        start = pb.StartNewOrchestrationAction(instanceId=new_id, name=orchestration_name)
        encoded = self._codec.encode(input, "input of orchestration '{}'", orchestration_name)
        if encoded is not None:
            start.input.value = encoded
        self._state.add_operation_action(pb.OperationAction(startNewOrchestration=start))
        return new_id
