"""One entity's state during a batch: kept as JSON text, checkpointed per operation, with its outgoing actions."""

from __future__ import annotations

from typing import Any

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.codec import Codec


class EntityState:
    """The state and actions of a batch so far; a failed operation rolls back to the last checkpoint.

    The state is held serialized, so a value read with :meth:`get` is a fresh copy: changing it has no
    effect until it is written back with :meth:`set`, and a value that cannot be serialized fails the
    operation that wrote it rather than the whole batch.
    """

    def __init__(self, encoded: str | None, codec: Codec) -> None:
        self._codec = codec
        self._text = encoded or None
        self._checkpoint_text = self._text
        self._actions: list[pb.OperationAction] = []
        self._checkpoint_actions = 0

    @property
    def codec(self) -> Codec:
        """The entity's codec (its errors name the entity)."""
        return self._codec

    @property
    def encoded(self) -> str | None:
        """The current state as JSON text (``None``: the entity has no state)."""
        return self._text

    @property
    def exists(self) -> bool:
        return self._text is not None

    def get(self, intended_type: Any = None, default: Any = None) -> Any:
        if self._text is None:
            return default
        value = self._codec.decode(self._text, intended_type)
        if isinstance(intended_type, type) and not isinstance(value, intended_type):
            # Microsoft's words: the default converter returned the raw value, which is not the type asked for.
            raise TypeError(f"Could not convert state of type '{type(value).__name__}' to '{intended_type.__name__}'")
        return value

    def set(self, value: Any) -> None:
        self._text = self._codec.encode(value, "entity state")

    def delete(self) -> None:
        self._text = None

    def add_action(self, action: pb.OperationAction) -> None:
        self._actions.append(action)

    @property
    def actions(self) -> list[pb.OperationAction]:
        """The actions of the operations that succeeded."""
        return self._actions[: self._checkpoint_actions]

    def commit(self) -> None:
        self._checkpoint_text = self._text
        self._checkpoint_actions = len(self._actions)

    def rollback(self) -> None:
        self._text = self._checkpoint_text
        del self._actions[self._checkpoint_actions :]
