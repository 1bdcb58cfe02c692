"""The live orchestration context: sequence IDs, pending actions and tasks, the clock, and driving the generator."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Generator
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from types import CoroutineType, GeneratorType
from typing import TYPE_CHECKING, Any, Protocol

from google.protobuf import timestamp_pb2

from durabletask._attach.fingerprint import TAG_PREFIX, is_reserved_tag
from durabletask._codec import Codec
from durabletask._errors import PayloadTooLargeError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import typehints
from durabletask._replay.actions import (
    CreateSubOrchestration,
    CreateTimer,
    PendingAction,
    ScheduleTask,
    SendEvent,
    complete_action,
)
from durabletask._replay.activity_control import CONTROL_TAG, ActivityCancellation, ActivityOptions, entity_key
from durabletask._replay.contexts import Activity, OrchestrationContext, Orchestrator
from durabletask._replay.controlled_activity import ActivityCall, ControlledActivityTask, announce_end
from durabletask._replay.coroutines import AsyncOrchestration
from durabletask._replay.failures import NonDeterminismError, OrchestrationStateError, proto_from_exception
from durabletask._replay.inbox import EventInbox, EventTimeout
from durabletask._replay.names import get_name
from durabletask._replay.retry import RetryPolicy
from durabletask._replay.tasks import (
    TASK_CLASSES,
    CancellableTask,
    CompletableTask,
    LockTask,
    RetryableTask,
    Task,
    TimerTask,
    is_task_class,
)
from durabletask._streams import wire as stream_wire
from durabletask._streams.turns import TurnStream
from durabletask.internal.json_encode_output_exception import JsonEncodeOutputException

if TYPE_CHECKING:
    from durabletask.entities.entity_lock import EntityLock

_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_OID, "9e952958-5e33-4daf-827f-2fa12937b875")
_EPOCH = datetime(1970, 1, 1)

COMPLETED = pb.ORCHESTRATION_STATUS_COMPLETED
FAILED = pb.ORCHESTRATION_STATUS_FAILED
TERMINATED = pb.ORCHESTRATION_STATUS_TERMINATED
CONTINUED_AS_NEW = pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW


def naive_utc(moment: datetime) -> datetime:
    """The orchestration clock is naive UTC; aware datetimes are converted to it."""
    if moment.utcoffset() is None:
        return moment
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def check_tags(tags: dict[str, str]) -> None:
    """Tags travel as a string map: reject anything else where the call is made."""
    for key, value in tags.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"tags must map strings to strings, got {key!r}: {value!r}")


def check_not_reserved(tags: dict[str, str]) -> None:
    """A child's tags may not forge or overwrite the attach fingerprint, as a client's may not."""
    for key in tags:
        if is_reserved_tag(key):
            raise ValueError(
                f"tags: the key {key!r} is reserved (keys starting with {TAG_PREFIX!r} hold an instance's attach "
                "fingerprint); choose another key"
            )


@lru_cache(maxsize=2048)
def _activity_call(activity: Callable[..., Any]) -> tuple[str, Any]:
    # A function passed to call_activity is asked its name and result type on every replayed call.
    return get_name(activity), typehints.output_type(activity)


class EntitySupport(Protocol):
    """Durable entity calls from orchestrations, plugged into a runtime.

    An implementation schedules its own :class:`PendingAction` subclasses with
    :meth:`RuntimeContext.schedule` (taking IDs from :meth:`RuntimeContext.next_sequence_id`) and
    registers handlers for the entity history events in the executor's :class:`HandlerTable`.
    """

    def call_entity(
        self, entity: Any, operation: str, input: Any = None, *, return_type: type | None = None
    ) -> CompletableTask[Any]: ...

    def signal_entity(
        self, entity_id: Any, operation_name: str, input: Any = None, signal_time: datetime | None = None
    ) -> None: ...

    def lock_entities(self, entities: list[Any]) -> LockTask[EntityLock]: ...

    def exit_critical_section(self) -> None: ...


class RuntimeContext(OrchestrationContext):
    """One execution's replay state. It outlives a single batch of events so it can be resumed."""

    def __init__(
        self,
        instance_id: str,
        codec: Codec,
        *,
        maximum_timer_interval: timedelta | None,
        entity_support: Callable[[RuntimeContext], EntitySupport],
        logger: logging.Logger | None = None,
        first_sequence_id: int = 1,
    ) -> None:
        self._instance_id = instance_id
        self.codec = codec
        self._maximum_timer_interval = maximum_timer_interval
        self._logger = logger
        # Reads an ExceptionPropertiesProvider's properties for the failure of the orchestrator.
        self.properties_of: Callable[[BaseException], Any] | None = None
        # Durable calls are numbered from 1, as the official SDK numbers them, so that an instance
        # started by one SDK replays under the other (rolling upgrades between them).
        self._seq = first_sequence_id
        # Calls made but not yet confirmed by a recorded event, in call order (= output order).
        self.pending: dict[int, PendingAction] = {}
        # Calls whose actions went out in an earlier batch of a resumed session.
        self.sent: dict[int, PendingAction] = {}
        # Tasks waiting for a completion event, keyed by the ID the event refers to.
        self.open: dict[int, CompletableTask[Any]] = {}
        self.inbox = EventInbox()
        self.is_replaying_flag = True
        self.started = False
        self.suspended = False
        self.suspended_events: list[pb.HistoryEvent] = []
        # Bounded activity calls by the task ID of their running attempt (see controlled_activity.py).
        self.activity_controls: dict[int, ControlledActivityTask] = {}
        self.at_turn_end: list[Callable[[], None]] = []  # decisions taken once the turn's events are applied
        self.has_bounded_activities = False
        self.execution_id = ""
        # The last orchestratorStarted event applied in the current batch: its timestamp is read only if the code
        # asks the time (most of them are replayed without anyone asking). end_batch() reduces it to
        # ``_clock_ts``, (seconds, nanos): an event keeps its whole work item alive (payloads and all) for as long
        # as a session keeps this context.
        self.clock_event: pb.HistoryEvent | None = None
        self._clock_ts: tuple[int, int] | None = None
        self._clock: datetime | None = None
        self._uuid_counter = 0
        self._version: str | None = None
        self._parent_instance_id: str | None = None
        self.name = ""
        self._gen: Generator[Any, Any, Any] | None = None
        self._async: AsyncOrchestration | None = None
        # How the orchestrator is resumed: the generator loop below, or an async orchestration's driver.
        self._step: Callable[[Any, BaseException | None], None] = self._drive
        self._current: Task[Any] | None = None
        self.done = False
        self._completion: pb.OrchestratorAction | None = None
        self._continue: tuple[str | None, bool, str | None] | None = None
        self.custom_status: str | None = None
        #: The version given to sub-orchestrations started without one (the worker's versioning policy).
        self.default_sub_version: str | None = None
        #: What the orchestrator publishes (durabletask.streams), sent with the turn that publishes it.
        self.stream = TurnStream()
        # Last: entity support is built around the finished context.
        self.entities: EntitySupport = entity_support(self)

    # ---- properties -------------------------------------------------------------------------
    @property
    def instance_id(self) -> str:
        return self._instance_id

    @property
    def parent_instance_id(self) -> str | None:
        return self._parent_instance_id

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def current_utc_datetime(self) -> datetime:
        if self.clock_event is not None:
            self._pin_clock()
        clock = self._clock
        if clock is None:
            ts = self._clock_ts
            clock = self._clock = _EPOCH + timedelta(seconds=ts[0], microseconds=ts[1] // 1000) if ts else _EPOCH
        return clock

    @property
    def has_clock(self) -> bool:
        """Whether an event has set the orchestration clock yet."""
        return self.clock_event is not None or self._clock_ts is not None

    def set_clock(self, timestamp: timestamp_pb2.Timestamp) -> None:
        self.clock_event = None
        self._clock_ts = (timestamp.seconds, timestamp.nanos)
        self._clock = None

    def _pin_clock(self) -> None:
        """Read the time from the last orchestratorStarted event and let go of the event."""
        event = self.clock_event
        if event is not None:
            self.set_clock(event.timestamp)  # clears clock_event

    @property
    def is_replaying(self) -> bool:
        return self.is_replaying_flag

    # ---- sequencing (also the extension point for entity calls) ------------------------------
    def next_sequence_id(self) -> int:
        """Take the next durable sequence ID."""
        seq = self._seq
        self._seq = seq + 1
        return seq

    def schedule(self, action: PendingAction, task: CompletableTask[Any] | None) -> None:
        """Record a call's action and, if it produces a result, the task its completion event resolves."""
        self.pending[action.id] = action
        if task is not None:
            self.open[action.id] = task

    def confirm(self, event_id: int) -> PendingAction | None:
        """Remove and return the action a recorded scheduling event confirms."""
        action = self.pending.pop(event_id, None)
        if action is None and self.sent:
            action = self.sent.pop(event_id, None)
        return action

    # ---- durable calls -----------------------------------------------------------------------
    def call_activity(
        self,
        activity: Activity[Any, Any] | str,
        *,
        input: Any = None,
        retry_policy: RetryPolicy | None = None,
        tags: dict[str, str] | None = None,
        return_type: type | None = None,
        version: str | None = None,
        start_to_close_timeout: timedelta | None = None,
        schedule_to_close_timeout: timedelta | None = None,
        schedule_to_start_timeout: timedelta | None = None,
        heartbeat_timeout: timedelta | None = None,
        cancellation: ActivityCancellation | None = None,
    ) -> Any:  # a CompletableTask, or a CancellableTask for a bounded call (see the overloads of the base class)
        if (
            start_to_close_timeout is not None
            or schedule_to_close_timeout is not None
            or schedule_to_start_timeout is not None
            or heartbeat_timeout is not None
            or cancellation is not None
        ):
            options = ActivityOptions.build(
                start_to_close_timeout,
                schedule_to_close_timeout,
                schedule_to_start_timeout,
                heartbeat_timeout,
                cancellation,
            )
            assert options is not None
            return self._bounded_activity(activity, input, retry_policy, tags, return_type, version, options)
        # The ID is taken before anything can raise, so a caught error still uses it up (as in the
        # official SDK) and later calls keep the numbers that SDK gives them.
        seq = self._seq
        self._seq = seq + 1
        if isinstance(activity, str):
            name = activity
        else:
            try:
                name, hinted = _activity_call(activity)
            except TypeError:  # an unhashable callable
                name, hinted = get_name(activity), typehints.output_type(activity)
            if return_type is None:
                return_type = self.codec.payload_type(hinted)
        encoded = self.codec.encode(input, "input of activity '{}'", name)
        if tags:
            check_tags(tags)
        action = ScheduleTask(seq, name, encoded, tags, version if version is not None else self._version)
        task: CompletableTask[Any] = (
            CompletableTask(return_type) if retry_policy is None else self._retryable(retry_policy, action, return_type)
        )
        self.pending[seq] = action
        self.open[seq] = task
        return task

    def _bounded_activity(
        self,
        activity: Activity[Any, Any] | str,
        input: Any,
        retry_policy: RetryPolicy | None,
        tags: dict[str, str] | None,
        return_type: type | None,
        version: str | None,
        options: ActivityOptions,
    ) -> ControlledActivityTask:
        if isinstance(activity, str):
            name = activity
        else:
            name = get_name(activity)
            if return_type is None:
                return_type = self.codec.payload_type(typehints.output_type(activity))
        encoded = self.codec.encode(input, "input of activity '{}'", name)
        if tags:
            check_tags(tags)
            if CONTROL_TAG in tags:
                raise ValueError(f"tags: the key {CONTROL_TAG!r} is reserved for the activity's timeouts")
        call = ActivityCall(name, encoded, tags, version if version is not None else self._version)
        self.has_bounded_activities = True
        return ControlledActivityTask(self, call, options, retry_policy, return_type)

    @property
    def activity_entity_key(self) -> str:
        """The key of this execution's activity control entity."""
        return entity_key(self._instance_id, self.execution_id)

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
        seq = self.next_sequence_id()
        name = orchestrator if isinstance(orchestrator, str) else get_name(orchestrator)
        encoded = self.codec.encode(input, "input of sub-orchestration '{}'", name)
        if tags:
            check_tags(tags)
            check_not_reserved(tags)
        child_id = instance_id if instance_id is not None else f"{self._instance_id}:{seq:04x}"
        action = CreateSubOrchestration(seq, name, child_id, encoded, version or self.default_sub_version, tags)
        task: CompletableTask[Any] = (
            CompletableTask(return_type) if retry_policy is None else self._retryable(retry_policy, action, return_type)
        )
        self.schedule(action, task)
        return task

    def _retryable(self, policy: RetryPolicy, action: PendingAction, return_type: Any) -> RetryableTask[Any]:
        sub = isinstance(action, CreateSubOrchestration)
        return RetryableTask(policy, action, self.current_utc_datetime, sub, return_type, reschedule=self._retry)

    def _retry(self, task: RetryableTask[Any]) -> None:
        # Every attempt reuses the first attempt's ID, as the official SDK does, so an instance can change
        # SDK while a retry is pending. It is unambiguous: an attempt is retried only after its completion
        # event, so each later event with that ID belongs to the attempt scheduled now.
        self.schedule(task._action, task)

    def create_timer(self, fire_at: datetime | timedelta) -> TimerTask:
        seq = self.next_sequence_id()
        now = self.current_utc_datetime
        final = now + fire_at if isinstance(fire_at, timedelta) else naive_utc(fire_at)
        timer = TimerTask(final, self._maximum_timer_interval)
        self.schedule_timer_chunk(timer, timer._next_fire_at(now) or final, seq)
        return timer

    def schedule_timer_chunk(self, timer: TimerTask, fire_at: datetime, seq: int | None = None) -> None:
        """Create the history timer for (the next piece of) ``timer``, under ``seq`` or the next ID."""
        if seq is None:
            seq = self.next_sequence_id()
        timer._chunk_fire_at = fire_at
        self.schedule(CreateTimer(seq, fire_at), timer)

        def cancel() -> None:
            self.pending.pop(seq, None)
            self.open.pop(seq, None)

        timer.set_cancel_handler(cancel)

    def wait_for_external_event(
        self, name: str, *, data_type: type | None = None, timeout: timedelta | None = None
    ) -> CancellableTask[Any]:
        task: CancellableTask[Any] = CancellableTask(data_type)
        key = name.casefold()
        found, raw = self.inbox.take_buffered(key)
        if found:
            task.complete(self.codec.decode(raw, data_type))
            return task
        inbox = self.inbox
        inbox.add_waiter(key, task)
        timer: TimerTask | None = None
        if timeout is not None:
            timer = self.create_timer(timeout)
            EventTimeout(inbox, key, name, task, timer)

        def cancel() -> None:
            inbox.remove_waiter(key, task)
            if timer is not None:
                timer.cancel()

        task.set_cancel_handler(cancel)
        return task

    def send_event(self, instance_id: str, event_name: str, *, data: Any | None = None) -> None:
        if not instance_id or not instance_id.strip():
            raise ValueError("instance_id cannot be empty")
        if instance_id.startswith("@"):
            raise ValueError("instance IDs starting with '@' belong to entities; use signal_entity() for them")
        if not event_name or not event_name.strip():
            raise ValueError("event_name cannot be empty")
        seq = self.next_sequence_id()
        encoded = self.codec.encode(data, "data of event '{}'", event_name)
        self.schedule(SendEvent(seq, instance_id, event_name, encoded), None)

    def set_custom_status(self, custom_status: Any) -> None:
        self.custom_status = self.codec.encode(custom_status, "custom status")

    def continue_as_new(self, new_input: Any, *, save_events: bool = False, new_version: str | None = None) -> None:
        if self.done:
            return
        encoded = self.codec.encode(new_input, "input of the continued-as-new execution")
        self._release_locks()
        self._continue = (encoded, save_events, new_version)
        self.done = True

    def new_uuid(self) -> str:
        stamp = self.current_utc_datetime.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        name = f"{self._instance_id}_{stamp}_{self._uuid_counter}"
        self._uuid_counter += 1
        return str(uuid.uuid5(_UUID_NAMESPACE, name))

    def call_entity(
        self, entity: Any, operation: str, input: Any = None, *, return_type: type | None = None
    ) -> CompletableTask[Any]:
        return self.entities.call_entity(entity, operation, input, return_type=return_type)

    def signal_entity(
        self, entity_id: Any, operation_name: str, input: Any = None, signal_time: datetime | None = None
    ) -> None:
        self.entities.signal_entity(entity_id, operation_name, input, signal_time)

    def lock_entities(self, entities: list[Any]) -> LockTask[EntityLock]:
        return self.entities.lock_entities(entities)

    def publish(self, value: Any, topic: str = stream_wire.DEFAULT_TOPIC) -> None:
        if self.done:
            raise stream_wire.PublishError(
                f"publish: orchestration '{self._instance_id}' has ended; nothing more can be published from it"
            )
        if self.is_replaying_flag:
            stream_wire.check_topic(topic)
            return
        self.stream.publish(self.codec, value, topic, self.current_utc_datetime)

    def _exit_critical_section(self) -> None:
        self.entities.exit_critical_section()

    # ---- running the orchestrator -------------------------------------------------------------
    def start(self, name: str, fn: Callable[..., Any], encoded_input: str | None) -> None:
        """Call the orchestrator function; a generator or coroutine is then driven as its tasks complete."""
        self.started = True
        self.name = name
        value = (
            self.codec.decode(encoded_input, self.codec.payload_type(typehints.input_type(fn)))
            if encoded_input
            else None
        )
        result = fn(self, value)
        if isinstance(result, GeneratorType):
            self._gen = result
            self._drive(None, None)
        elif isinstance(result, CoroutineType):
            self._async = AsyncOrchestration(self, name, result)
            self._step = self._async.drive
            self._step(None, None)
        else:
            self.complete(result)

    def resume(self) -> None:
        """Continue the generator (or coroutine) if the task it is waiting on has completed."""
        current = self._current
        if current is not None and current._is_complete and not self.done:
            self._step(current._result, current._exception)

    def end_batch(self) -> None:
        """A batch of events has been applied: an ``async def`` orchestrator hands back the thread's event loop, and
        the clock keeps the time of the batch's last orchestratorStarted event rather than the event."""
        self._pin_clock()
        if self._async is not None:
            self._async.leave()

    def _drive(self, value: Any, error: BaseException | None) -> None:
        gen = self._gen
        assert gen is not None
        while True:
            try:
                task = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                self._current = None
                self.complete(stop.value)
                return
            durable = TASK_CLASSES.get(task.__class__)
            if durable is None:
                durable = is_task_class(task.__class__)
            if not durable:
                raise OrchestrationStateError(
                    f"orchestrator '{self.name}' yielded {type(task).__name__}; only durable tasks can be yielded"
                )
            self._current = task
            if self.done or not task._is_complete:
                return
            value, error = task._result, task._exception

    def complete(self, result: Any) -> None:
        """End the execution successfully (ignored once it has ended, e.g. after ``continue_as_new``)."""
        if self.done:
            return
        try:
            encoded = self.codec.encode(result, "orchestration output")
        except PayloadTooLargeError as error:  # our size limit, named as such (docs/conformance.md, (4))
            self.fail(error)
            return
        except (TypeError, ValueError):
            # As Microsoft's executor: the failure names the value, not the encoder's complaint about it.
            self.fail(JsonEncodeOutputException(result))
            return
        except Exception as error:  # e.g. a to_json hook's own error
            self.fail(error)
            return
        self._end(COMPLETED, encoded)

    def fail(self, error: BaseException, *, force: bool = False) -> None:
        """End the execution as failed. Non-determinism (or ``force``) overrides any earlier ending."""
        if self.done and not force and not isinstance(error, NonDeterminismError):
            return
        self._continue = None
        self._end(FAILED, None, proto_from_exception(error, properties_of=self.properties_of))

    def terminate(self, encoded_output: str | None) -> None:
        """End the execution because a client terminated it."""
        if self.done:
            return
        self._end(TERMINATED, encoded_output)

    def _release_locks(self) -> None:
        # Entity locks still held when the execution ends must be released by this episode's actions; bounded
        # attempts still running are told in the same turn that the execution ends.
        if not self.done:
            self.entities.exit_critical_section()
            announce_end(self)

    def _end(
        self, status: pb.OrchestrationStatus, encoded_output: str | None, failure: pb.TaskFailureDetails | None = None
    ) -> None:
        # Locks are released first: their unlock messages take IDs before the completion action does.
        self._release_locks()
        self.done = True
        self._completion = complete_action(self.next_sequence_id(), status, encoded_output, failure)
        self._current = None

    def drain_actions(self) -> list[pb.OrchestratorAction]:
        """The actions to send now; they are then remembered as sent (for resumed sessions)."""
        actions = [action.to_proto() for action in self.pending.values()]
        published = self.stream.action(self._instance_id)
        if published is not None:
            actions.append(published)
        for action in self.pending.values():
            if not isinstance(self.open.get(action.id), RetryableTask):  # a retry sends the same action again
                action.release_payload()
        self.sent = self.pending
        self.pending = {}
        if self._continue is not None:
            encoded, save_events, new_version = self._continue
            carryover = self.inbox.carryover() if save_events else None
            actions.append(
                complete_action(
                    self.next_sequence_id(), CONTINUED_AS_NEW, encoded, carryover=carryover, new_version=new_version
                )
            )
        elif self._completion is not None:
            actions.append(self._completion)
        return actions

    def set_started_info(self, version: str | None, parent_instance_id: str | None) -> None:
        self._version = version
        self._parent_instance_id = parent_instance_id
