"""Entity metadata as reported by the service: identity, last change, backlog, lock owner and state."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, TypeVar, overload

from durabletask._errors import ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.serialization import DEFAULT_DATA_CONVERTER, DataConverter

__all__ = ["EntityMetadata"]

TState = TypeVar("TState")


class EntityMetadata:
    """A snapshot of one durable entity.

    Attributes:
        id: The entity's identity.
        last_modified: When its state last changed (timezone-aware, UTC).
        backlog_queue_size: Operations waiting to be processed.
        includes_state: Whether the state was requested (and so is present if the entity has one).
    """

    def __init__(
        self,
        id: EntityInstanceId,
        last_modified: datetime,
        backlog_queue_size: int,
        locked_by: str,
        includes_state: bool,
        state: Any | None,
        data_converter: DataConverter | None = None,
    ) -> None:
        self.id = id
        self.last_modified = last_modified
        self.backlog_queue_size = backlog_queue_size
        self._locked_by = locked_by
        self.includes_state = includes_state
        self._state = state
        self._data_converter = data_converter

    def __repr__(self) -> str:
        return (
            f"EntityMetadata(id={self.id!r}, last_modified={self.last_modified!r}, "
            f"backlog_queue_size={self.backlog_queue_size}, locked_by={self._locked_by!r}, "
            f"includes_state={self.includes_state})"
        )

    @staticmethod
    def from_entity_response(
        entity_response: pb.GetEntityResponse, includes_state: bool, data_converter: DataConverter | None = None
    ) -> EntityMetadata:
        """Build from a ``GetEntity`` response.

        Args:
            entity_response: The response message.
            includes_state: Whether the request asked for the state.
            data_converter: Decodes the state for :meth:`get_typed_state`; the default JSON converter when ``None``.
        """
        return EntityMetadata.from_entity_metadata(entity_response.entity, includes_state, data_converter)

    @staticmethod
    def from_entity_metadata(
        entity: pb.EntityMetadata, includes_state: bool, data_converter: DataConverter | None = None
    ) -> EntityMetadata:
        """Build from the wire message.

        The compatible API puts this constructor on the model, so the model reads its own wire form here
        (protobuf types only); every other proto-to-model conversion lives in ``durabletask._grpc.convert``.

        Args:
            entity: The wire ``EntityMetadata``.
            includes_state: Whether the request asked for the state.
            data_converter: Decodes the state for :meth:`get_typed_state`; the default JSON converter when ``None``.

        Raises:
            ProtocolError: The service returned an entity ID that is not in ``@name@key`` form.
        """
        try:
            entity_id = EntityInstanceId.parse(entity.instanceId)
        except ValueError as exc:
            raise ProtocolError(f"the service returned an invalid entity ID: {exc}") from exc
        state = entity.serializedState.value if includes_state and entity.HasField("serializedState") else None
        return EntityMetadata(
            id=entity_id,
            last_modified=entity.lastModifiedTime.ToDatetime(tzinfo=timezone.utc),
            backlog_queue_size=entity.backlogQueueSize,
            locked_by=entity.lockedBy.value,
            includes_state=includes_state,
            state=state,
            data_converter=data_converter,
        )

    @overload
    def get_state(self, intended_type: type[TState]) -> TState | None: ...
    @overload
    def get_state(self, intended_type: None = None) -> Any: ...
    def get_state(self, intended_type: type[Any] | None = None) -> Any:
        """The state exactly as stored (its JSON text), or ``intended_type(text)`` when a type is given.

        Use :meth:`get_typed_state` to decode the JSON instead.

        Args:
            intended_type: A type built from the stored JSON text (Microsoft's behaviour); ``None`` returns the text.

        Raises:
            TypeError: ``intended_type`` cannot be built from the stored text.
        """
        if intended_type is None or self._state is None or isinstance(self._state, intended_type):
            return self._state
        try:
            return intended_type(self._state)
        except Exception as exc:
            raise TypeError(
                f"cannot convert the entity state ({type(self._state).__name__}) to {intended_type.__name__}"
            ) from exc

    @overload
    def get_typed_state(self, intended_type: type[TState]) -> TState | None: ...
    @overload
    def get_typed_state(self, intended_type: None = None) -> Any: ...
    def get_typed_state(self, intended_type: Any = None) -> Any:
        """The decoded state (``None`` if absent), rebuilt as ``intended_type`` when given.

        Args:
            intended_type: A class to rebuild the decoded JSON as; ``None`` returns the decoded value.
        """
        if self._state is None:
            return None
        converter = self._data_converter if self._data_converter is not None else DEFAULT_DATA_CONVERTER
        return converter.deserialize(self._state, intended_type)

    def get_locked_by(self) -> EntityInstanceId | None:
        """Who holds the entity's lock, or ``None`` if it is unlocked.

        Raises:
            ValueError: the lock owner is not in ``@name@key`` form.
        """
        if not self._locked_by:
            return None
        return EntityInstanceId.parse(self._locked_by)
