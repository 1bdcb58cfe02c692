"""The abstract orchestration context user code programs against, the activity context, and callable aliases."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Generator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, overload

from durabletask._replay.activity_control import ActivityCancellation
from durabletask._replay.replay_logger import ReplaySafeLogger
from durabletask._replay.retry import RetryPolicy
from durabletask._replay.tasks import CancellableTask, CompletableTask, LockTask, Task, TimerTask
from durabletask._streams.wire import PublishError

if TYPE_CHECKING:
    from durabletask.entities.entity_lock import EntityLock

T = TypeVar("T")


class Publisher(Protocol):
    """Where an activity's published items go (the worker gives each running activity one)."""

    def publish(self, value: Any, topic: str) -> None: ...


TInput = TypeVar("TInput")
TOutput = TypeVar("TOutput")


class OrchestrationContext(ABC):
    """What an orchestrator function can see and do. Every method is deterministic under replay."""

    @property
    @abstractmethod
    def instance_id(self) -> str:
        """The orchestration instance ID."""

    @property
    @abstractmethod
    def parent_instance_id(self) -> str | None:
        """The parent's instance ID for a sub-orchestration, else ``None``."""

    @property
    @abstractmethod
    def version(self) -> str | None:
        """The version the orchestration was started with, if any."""

    @property
    @abstractmethod
    def current_utc_datetime(self) -> datetime:
        """The orchestration's clock (naive UTC), taken from history so it is the same on every replay."""

    @property
    @abstractmethod
    def is_replaying(self) -> bool:
        """Whether the code is re-running past history (side effects such as logging should be skipped)."""

    @abstractmethod
    def set_custom_status(self, custom_status: Any) -> None:
        """Set a JSON-serializable custom status visible to clients.

        Args:
            custom_status: Any value the data converter can serialize; ``None`` clears it.
        """

    @abstractmethod
    def create_timer(self, fire_at: datetime | timedelta) -> TimerTask:
        """A durable timer that fires at ``fire_at`` (or after that much orchestration time).

        Args:
            fire_at: An absolute time (naive values are UTC) or a delay from the orchestration's current time.
        """

    # The first four overloads are plain calls (no timeout, no cancellation type); the next four, bounded
    # calls, return a CancellableTask. They type an awaited (or yielded-into-a-variable) call by the activity's
    # return annotation, or by ``return_type``; a coroutine activity's result is what it returns, not the
    # coroutine.
    @overload
    def call_activity(
        self,
        activity: Activity[TInput, Any] | str,
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: type[T],
        version: str | None = ...,
        start_to_close_timeout: None = ...,
        schedule_to_close_timeout: None = ...,
        schedule_to_start_timeout: None = ...,
        heartbeat_timeout: None = ...,
        cancellation: None = ...,
    ) -> CompletableTask[T]: ...

    # A coroutine activity also matches the bounded overload for plain functions below, with its coroutine
    # as the result; the first match wins, so the overlap is harmless.
    @overload
    def call_activity(  # type: ignore[overload-overlap]
        self,
        activity: Callable[[ActivityContext, TInput], Awaitable[TOutput]],
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: None = ...,
        schedule_to_close_timeout: None = ...,
        schedule_to_start_timeout: None = ...,
        heartbeat_timeout: None = ...,
        cancellation: None = ...,
    ) -> CompletableTask[TOutput]: ...

    @overload
    def call_activity(
        self,
        activity: Activity[TInput, TOutput],
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: None = ...,
        schedule_to_close_timeout: None = ...,
        schedule_to_start_timeout: None = ...,
        heartbeat_timeout: None = ...,
        cancellation: None = ...,
    ) -> CompletableTask[TOutput]: ...

    @overload
    def call_activity(
        self,
        activity: str,
        *,
        input: Any = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: None = ...,
        schedule_to_close_timeout: None = ...,
        schedule_to_start_timeout: None = ...,
        heartbeat_timeout: None = ...,
        cancellation: None = ...,
    ) -> CompletableTask[Any]: ...

    @overload
    def call_activity(
        self,
        activity: Activity[TInput, Any] | str,
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: type[T],
        version: str | None = ...,
        start_to_close_timeout: timedelta | None = ...,
        schedule_to_close_timeout: timedelta | None = ...,
        schedule_to_start_timeout: timedelta | None = ...,
        heartbeat_timeout: timedelta | None = ...,
        cancellation: ActivityCancellation | None = ...,
    ) -> CancellableTask[T]: ...

    @overload
    def call_activity(
        self,
        activity: Callable[[ActivityContext, TInput], Awaitable[TOutput]],
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: timedelta | None = ...,
        schedule_to_close_timeout: timedelta | None = ...,
        schedule_to_start_timeout: timedelta | None = ...,
        heartbeat_timeout: timedelta | None = ...,
        cancellation: ActivityCancellation | None = ...,
    ) -> CancellableTask[TOutput]: ...

    @overload
    def call_activity(
        self,
        activity: Activity[TInput, TOutput],
        *,
        input: TInput | None = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: timedelta | None = ...,
        schedule_to_close_timeout: timedelta | None = ...,
        schedule_to_start_timeout: timedelta | None = ...,
        heartbeat_timeout: timedelta | None = ...,
        cancellation: ActivityCancellation | None = ...,
    ) -> CancellableTask[TOutput]: ...

    @overload
    def call_activity(
        self,
        activity: str,
        *,
        input: Any = ...,
        retry_policy: RetryPolicy | None = ...,
        tags: dict[str, str] | None = ...,
        return_type: None = ...,
        version: str | None = ...,
        start_to_close_timeout: timedelta | None = ...,
        schedule_to_close_timeout: timedelta | None = ...,
        schedule_to_start_timeout: timedelta | None = ...,
        heartbeat_timeout: timedelta | None = ...,
        cancellation: ActivityCancellation | None = ...,
    ) -> CancellableTask[Any]: ...

    @abstractmethod
    def call_activity(
        self,
        activity: Activity[TInput, TOutput] | str,
        *,
        input: TInput | None = None,
        retry_policy: RetryPolicy | None = None,
        tags: dict[str, str] | None = None,
        return_type: type | None = None,
        version: str | None = None,
        start_to_close_timeout: timedelta | None = None,
        schedule_to_close_timeout: timedelta | None = None,
        schedule_to_start_timeout: timedelta | None = None,
        heartbeat_timeout: timedelta | None = None,
        cancellation: ActivityCancellation | None = None,
    ) -> CompletableTask[Any]:
        """Schedule an activity and return a task for its result.

        Args:
            activity: The activity function or its registered name.
            input: JSON-serializable input.
            retry_policy: How to retry the activity if it fails.
            tags: Tags recorded with the scheduled activity.
            return_type: Type to rebuild the result as; defaults to the function's return annotation.
            version: Activity version; defaults to the orchestration's version.
            start_to_close_timeout: How long one attempt may run, from its start on a worker. An attempt that
                runs longer fails with ``ActivityTimeoutError`` and is retried per ``retry_policy``.
            schedule_to_close_timeout: How long the whole call may take: all attempts, their waits in the
                queue and the delays between them. When it expires the call fails, without further retries.
            schedule_to_start_timeout: How long one attempt may wait in the queue before a worker starts it.
            heartbeat_timeout: The longest silence between two heartbeats of a running attempt
                (``ActivityContext.heartbeat``); a silent attempt fails and is retried.
            cancellation: What ``cancel()`` on the returned task does (``ActivityCancellation``; default
                ``TRY_CANCEL``).

        With any of the last five arguments the call returns a ``CancellableTask`` whose attempts are bounded
        and can be cancelled (see docs/activities.md); without them it behaves as it always did.
        """

    @overload
    def call_sub_orchestrator(
        self,
        orchestrator: Orchestrator[TInput, Any] | str,
        *,
        input: TInput | None = ...,
        instance_id: str | None = ...,
        retry_policy: RetryPolicy | None = ...,
        version: str | None = ...,
        return_type: type[T],
        tags: dict[str, str] | None = ...,
    ) -> CompletableTask[T]: ...

    @overload
    def call_sub_orchestrator(
        self,
        orchestrator: Callable[[OrchestrationContext, TInput], Coroutine[Any, Any, TOutput]],
        *,
        input: TInput | None = ...,
        instance_id: str | None = ...,
        retry_policy: RetryPolicy | None = ...,
        version: str | None = ...,
        return_type: None = ...,
        tags: dict[str, str] | None = ...,
    ) -> CompletableTask[TOutput]: ...

    @overload
    def call_sub_orchestrator(
        self,
        orchestrator: Callable[[OrchestrationContext, TInput], Generator[Any, Any, TOutput]],
        *,
        input: TInput | None = ...,
        instance_id: str | None = ...,
        retry_policy: RetryPolicy | None = ...,
        version: str | None = ...,
        return_type: None = ...,
        tags: dict[str, str] | None = ...,
    ) -> CompletableTask[TOutput]: ...

    @overload
    def call_sub_orchestrator(
        self,
        orchestrator: Callable[[OrchestrationContext, TInput], TOutput],
        *,
        input: TInput | None = ...,
        instance_id: str | None = ...,
        retry_policy: RetryPolicy | None = ...,
        version: str | None = ...,
        return_type: None = ...,
        tags: dict[str, str] | None = ...,
    ) -> CompletableTask[TOutput]: ...

    @overload
    def call_sub_orchestrator(
        self,
        orchestrator: str,
        *,
        input: Any = ...,
        instance_id: str | None = ...,
        retry_policy: RetryPolicy | None = ...,
        version: str | None = ...,
        return_type: None = ...,
        tags: dict[str, str] | None = ...,
    ) -> CompletableTask[Any]: ...

    @abstractmethod
    def call_sub_orchestrator(
        self,
        orchestrator: Orchestrator[Any, Any] | str,
        *,
        input: Any = None,
        instance_id: str | None = None,
        retry_policy: RetryPolicy | None = None,
        version: str | None = None,
        return_type: type | None = None,
        tags: dict[str, str] | None = None,
    ) -> CompletableTask[Any]:
        """Start a sub-orchestration and return a task for its output.

        Args:
            orchestrator: The orchestrator function or its registered name.
            input: JSON-serializable input.
            instance_id: The child's instance ID; a deterministic one is derived if omitted.
            retry_policy: How to retry the sub-orchestration if it fails.
            version: The child's version.
            return_type: Type to rebuild the output as.
            tags: Tags for the child orchestration.
        """

    @overload
    def wait_for_external_event(
        self, name: str, *, data_type: type[T], timeout: timedelta | None = ...
    ) -> CancellableTask[T]: ...

    @overload
    def wait_for_external_event(
        self, name: str, *, data_type: None = ..., timeout: timedelta | None = ...
    ) -> CancellableTask[Any]: ...

    @abstractmethod
    def wait_for_external_event(
        self, name: str, *, data_type: type | None = None, timeout: timedelta | None = None
    ) -> CancellableTask[Any]:
        """A task completed by the next external event named ``name`` (case-insensitive).

        Args:
            name: The event name.
            data_type: Type to rebuild the event payload as.
            timeout: If given, the task fails with ``TimeoutError`` when no event arrives in time.
        """

    def send_event(self, instance_id: str, event_name: str, *, data: Any | None = None) -> None:
        """Send an event to another orchestration instance (fire and forget).

        Args:
            instance_id: The receiving instance.
            event_name: The event's name (the receiver matches it case-insensitively).
            data: The event's payload.

        Raises:
            NotImplementedError: This context cannot send events.
        """
        raise NotImplementedError("This OrchestrationContext does not support send_event().")

    @abstractmethod
    def continue_as_new(self, new_input: Any, *, save_events: bool = False, new_version: str | None = None) -> None:
        """Restart the orchestration with ``new_input`` and a fresh history once this episode ends.

        Args:
            new_input: The input for the new execution.
            save_events: Carry external events not yet consumed over to the new execution.
            new_version: A version for the new execution.
        """

    @abstractmethod
    def new_uuid(self) -> str:
        """A UUID that is the same on every replay (name-based, RFC 4122 section 4.3)."""

    @overload
    def call_entity(
        self, entity: Any, operation: str, input: Any = ..., *, return_type: type[T]
    ) -> CompletableTask[T]: ...

    @overload
    def call_entity(
        self, entity: Any, operation: str, input: Any = ..., *, return_type: None = ...
    ) -> CompletableTask[Any]: ...

    @abstractmethod
    def call_entity(
        self, entity: Any, operation: str, input: Any = None, *, return_type: type | None = None
    ) -> CompletableTask[Any]:
        """Call an operation on a durable entity and return a task for its result.

        Args:
            entity: The entity, as an ``EntityInstanceId`` or its ``@name@key`` string.
            operation: The operation name.
            input: The operation's input.
            return_type: A class to rebuild the result as.
        """

    @abstractmethod
    def signal_entity(
        self, entity_id: Any, operation_name: str, input: Any = None, signal_time: datetime | None = None
    ) -> None:
        """Signal an operation on a durable entity without waiting for it.

        Args:
            entity_id: The entity, as an ``EntityInstanceId`` or its ``@name@key`` string.
            operation_name: The operation name.
            input: The operation's input.
            signal_time: Deliver the signal no earlier than this time; at once when ``None``.
        """

    @abstractmethod
    def lock_entities(self, entities: list[Any]) -> LockTask[EntityLock]:
        """A task that completes with a lock context manager once all ``entities`` are locked.

        Hold the lock with ``with (yield task):`` in a generator orchestrator, or ``async with task:`` in an
        ``async def`` one.

        Args:
            entities: The entities to lock, as ``EntityInstanceId`` values or ``@name@key`` strings.
        """

    @abstractmethod
    def _exit_critical_section(self) -> None:
        """Release entity locks held by the orchestration."""

    def publish(self, value: Any, topic: str = "default") -> None:
        """Publish ``value`` to the instance's durable stream, for ``client.subscribe`` (see docs/streams.md).

        The items of a turn are stored once, when the turn commits (one history event per turn); a replay
        publishes nothing again. Raises ``ValueError`` for an item over 64 KiB, or over 512 KiB in one turn.

        Args:
            value: A JSON-serializable item.
            topic: The topic subscribers filter on.

        Raises:
            PublishError: This context is not a running orchestration.
            ValueError: The item or the turn's items are over the limits above.
        """
        raise PublishError(f"publish: {type(self).__name__} is not a running orchestration and cannot publish")

    def create_replay_safe_logger(self, logger: logging.Logger) -> ReplaySafeLogger:
        """Wrap ``logger`` so that it stays silent while the orchestrator replays.

        Args:
            logger: The logger to wrap.
        """
        return ReplaySafeLogger(logger, lambda: self.is_replaying)


class HeartbeatChannel(Protocol):
    """How a running activity reaches its orchestration: the worker's side of ``ActivityContext.heartbeat``."""

    @property
    def details(self) -> Any:
        """The last heartbeat details of the previous attempt, or ``None``."""

    @property
    def cancelled(self) -> bool:
        """Whether the activity was asked to stop."""

    def beat(self, details: Any) -> None:
        """Record a heartbeat (checked now, sent later); raises once the activity was asked to stop."""


class ActivityContext:
    """What an activity function learns about its invocation, and how it heartbeats."""

    def __init__(
        self,
        orchestration_id: str,
        task_id: int,
        *,
        heartbeats: HeartbeatChannel | None = None,
        publisher: Publisher | None = None,
    ) -> None:
        self._orchestration_id = orchestration_id
        self._task_id = task_id
        self._heartbeats = heartbeats
        self._publisher = publisher

    def publish(self, value: Any, topic: str = "default") -> None:
        """Publish ``value`` to the orchestration's durable stream while the activity runs (docs/streams.md).

        Items are sent in batches (about every 50 ms) and are all stored before the activity's result is
        reported. They carry this task's ID and attempt. Raises ``ValueError`` for an item over 64 KiB.

        Args:
            value: A JSON-serializable item.
            topic: The topic subscribers filter on.

        Raises:
            PublishError: This context does not belong to an activity run by a worker.
            ValueError: The item is over 64 KiB once serialized.
        """
        publisher = self._publisher
        if publisher is None:
            raise PublishError(
                "publish: this ActivityContext does not belong to an activity run by a worker, so it cannot publish"
            )
        publisher.publish(value, topic)

    @property
    def orchestration_id(self) -> str:
        """The instance ID of the orchestration that scheduled this activity."""
        return self._orchestration_id

    @property
    def task_id(self) -> int:
        """The activity's sequence number within its orchestration."""
        return self._task_id

    @property
    def heartbeat_details(self) -> Any:
        """The details of the previous attempt's last heartbeat that reached the orchestration; ``None`` on the
        first attempt (and when the previous ones never heartbeated with details)."""
        return None if self._heartbeats is None else self._heartbeats.details

    @property
    def is_cancellation_requested(self) -> bool:
        """Whether the activity was asked to stop: the call was cancelled, the attempt timed out, or the
        orchestration ended. Seen at most one throttle interval late (see docs/activities.md)."""
        return self._heartbeats is not None and self._heartbeats.cancelled

    def heartbeat(self, details: Any = None) -> None:
        """Tell the orchestration the activity is alive, with ``details`` for a later attempt to resume from.

        Never blocks on the network: heartbeats are sent in the background, at most one per 0.8 x the call's
        ``heartbeat_timeout``, the latest details replacing earlier unsent ones. Outside a bounded call (no
        timeout or cancellation type given to ``call_activity``) the details are only checked.

        Args:
            details: JSON-serializable progress (at most 64 KiB once serialized), given to a later attempt as
                :attr:`heartbeat_details`.

        Raises:
            ActivityCancelledError: The activity was asked to stop.
            SerializationError: ``details`` cannot be serialized.
            PayloadTooLargeError: ``details`` exceed 64 KiB once serialized.
        """
        if self._heartbeats is not None:
            self._heartbeats.beat(details)


#: An orchestrator: ``(context, input)`` → a generator of tasks returning the output, a coroutine awaiting
#: tasks and returning it (``async def``), or the output directly.
Orchestrator: TypeAlias = Callable[
    [OrchestrationContext, TInput],
    Generator[Task[Any], Any, TOutput] | Coroutine[Any, Any, TOutput] | TOutput,
]
#: An activity: ``(context, input)`` → output.
Activity: TypeAlias = Callable[[ActivityContext, TInput], TOutput]
#: An entity: a function ``(entity_context, input)`` or an entity class.
Entity: TypeAlias = Callable[[Any, TInput], TOutput] | type[Any]
