"""Class-based entities: each public method of a ``DurableEntity`` subclass is an operation."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar, overload

from durabletask.entities.entity_context import EntityContext
from durabletask.entities.entity_instance_id import EntityInstanceId

__all__ = ["DurableEntity"]

TState = TypeVar("TState")


class DurableEntity:
    """Base class for class-based entities.

    A new instance serves each operation; the durable part is the state, read with :meth:`get_state`
    and written with :meth:`set_state`. A method taking one argument receives the operation's input.
    Names starting with ``_`` are never operations. ``delete`` is built in and removes the state.

    Example::

        class Counter(DurableEntity):
            def add(self, amount: int) -> int:
                total = self.get_state(int, 0) + amount
                self.set_state(total)
                return total
    """

    entity_context: EntityContext

    def _initialize_entity_context(self, context: EntityContext) -> None:
        self.entity_context = context

    @overload
    def get_state(self, intended_type: type[TState], default: TState) -> TState: ...
    @overload
    def get_state(self, intended_type: type[TState]) -> TState | None: ...
    @overload
    def get_state(self, intended_type: None = None, default: Any = None) -> Any: ...
    def get_state(self, intended_type: Any = None, default: Any = None) -> Any:
        """The entity's state, or ``default`` when it has none (see :meth:`EntityContext.get_state`).

        Args:
            intended_type: A class to rebuild the state as; ``None`` returns the decoded JSON value.
            default: Returned when the entity has no state.
        """
        return self.entity_context.get_state(intended_type, default)

    def set_state(self, state: Any) -> None:
        """Replace the entity's state.

        Args:
            state: The new state (``None`` deletes it).
        """
        self.entity_context.set_state(state)

    def signal_entity(
        self,
        entity_instance_id: EntityInstanceId | str,
        operation: str,
        input: Any | None = None,
        signal_time: datetime | None = None,
    ) -> None:
        """Send a one-way operation to an entity once this operation succeeds.

        Args:
            entity_instance_id: The target entity, as an ID or its ``@name@key`` string.
            operation: The operation name to call on it.
            input: The operation's input (serialized now).
            signal_time: Deliver the signal no earlier than this time; at once when ``None``.
        """
        self.entity_context.signal_entity(entity_instance_id, operation, input, signal_time)

    def schedule_new_orchestration(
        self, orchestration_name: str, input: Any | None = None, instance_id: str | None = None
    ) -> str:
        """Start an orchestration once this operation succeeds; returns its instance ID.

        Args:
            orchestration_name: The registered name of the orchestrator to start.
            input: The orchestration's input.
            instance_id: The new instance's ID; a random one when ``None``.
        """
        return self.entity_context.schedule_new_orchestration(orchestration_name, input, instance_id=instance_id)

    def delete(self, input: Any = None) -> None:
        """The built-in ``delete`` operation: remove the entity's state.

        Args:
            input: Ignored; the operation takes no input (kept so that ``delete`` can be signalled with one, as
                Microsoft's base class allows).
        """
        self.entity_context.delete_state()
