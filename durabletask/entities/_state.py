"""One entity's state during a batch: kept as JSON text, checkpointed per operation, with its outgoing actions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from durabletask._codec import Codec
from durabletask._proto import orchestrator_service_pb2 as pb

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

__all__ = ["StateShim"]


class StateShim:
    """The state and actions of an entity's batch so far; a failed operation rolls back to the last checkpoint.

    The name, constructor and methods are those of Microsoft's class, which an application builds to call
    an entity function in a test (``EntityContext(..., StateShim(0, JsonDataConverter()), ...)``). The
    state is held serialized, so a value read with :meth:`get_state` is a fresh copy: changing it has no
    effect until it is written back with :meth:`set_state`, and a value that cannot be serialized fails the
    operation that wrote it rather than the whole batch.

    Args:
        start_state: The state before the batch: a value, or its JSON text with ``is_serialized=True``
            (``None``: no state).
        data_converter: Writes and reads the state (``None``: the default converter).
        is_serialized: ``start_state`` is already JSON text, kept as it is.
        codec: Used instead of ``data_converter`` by the worker (its errors name the entity).
    """

    def __init__(
        self,
        start_state: Any,
        data_converter: DataConverter | None = None,
        *,
        is_serialized: bool = False,
        codec: Codec | None = None,
    ) -> None:
        self._codec = codec if codec is not None else Codec(data_converter)
        if start_state is None or is_serialized:
            text = start_state or None
        else:
            text = self._codec.encode(start_state, "entity state")
        self._text: str | None = text
        self._checkpoint_text = text
        self._actions: list[pb.OperationAction] = []
        self._checkpoint_actions = 0

    @property
    def codec(self) -> Codec:
        """The entity's codec (its errors name the entity)."""
        return self._codec

    @property
    def exists(self) -> bool:
        """Whether the entity has a state now."""
        return self._text is not None

    def get_state(self, intended_type: Any = None, default: Any = None) -> Any:
        """The state, rebuilt as ``intended_type`` when given, or ``default`` when there is none.

        Args:
            intended_type: A class to rebuild the state as; ``None`` returns the decoded JSON value.
            default: Returned when the entity has no state.

        Raises:
            TypeError: the state cannot be read as ``intended_type`` (a class); Microsoft's words.
        """
        if self._text is None:
            return default
        value = self._codec.decode(self._text, intended_type)
        if isinstance(intended_type, type) and not isinstance(value, intended_type):
            # The default converter returned the raw value, which is not the type asked for.
            raise TypeError(f"Could not convert state of type '{type(value).__name__}' to '{intended_type.__name__}'")
        return value

    def set_state(self, state: Any) -> None:
        """Replace the state (``None`` deletes it); serialized now, so a bad value fails this operation.

        Args:
            state: The new state; must be serializable by the entity's converter.

        Raises:
            PayloadTooLargeError: The serialized state is over the payload limit.
        """
        self._text = self._codec.encode(state, "entity state")

    def encode_state(self) -> str | None:
        """The current state as JSON text (``None``: the entity has no state)."""
        return self._text

    def add_operation_action(self, action: pb.OperationAction) -> None:
        """An action (signal, orchestration start) of the running operation, sent only if it succeeds.

        Args:
            action: The signal or orchestration start to send once the operation succeeds.
        """
        self._actions.append(action)

    def get_operation_actions(self) -> list[pb.OperationAction]:
        """The actions of the operations that succeeded."""
        return self._actions[: self._checkpoint_actions]

    def commit(self) -> None:
        """The running operation succeeded: keep its state and actions."""
        self._checkpoint_text = self._text
        self._checkpoint_actions = len(self._actions)

    def rollback(self) -> None:
        """The running operation failed: back to the state and actions of the last commit."""
        self._text = self._checkpoint_text
        del self._actions[self._checkpoint_actions :]

    def reset(self) -> None:
        """Forget everything: no state, no actions, nothing committed."""
        self._text = None
        self._checkpoint_text = None
        self._actions = []
        self._checkpoint_actions = 0
