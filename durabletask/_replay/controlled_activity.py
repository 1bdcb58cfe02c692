"""A bounded activity call in the orchestration: attempts raced against durable timers, retries and cancellation.

Every decision is taken from recorded events only (the attempt's completion, its start and heartbeat events,
timers firing), so a replay makes the same ones; an attempt that was given up is removed from the tasks that
completion events resolve, and its late result then changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol

from durabletask._codec import Codec
from durabletask._json_codec import utf8_size
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import activity_control as control
from durabletask._replay.actions import PendingAction, ScheduleTask
from durabletask._replay.failures import (
    ActivityCancelledError,
    ActivityTimeoutError,
    TaskCancelledError,
    details_from_proto,
    qualified_name,
)
from durabletask._replay.retry import RetryPolicy
from durabletask._replay.tasks import CancellableTask, CompletableTask, Task, TimerTask

_CANCELLED_TYPE = qualified_name(ActivityCancelledError)
_TIMEOUT_TYPE = qualified_name(ActivityTimeoutError)
_Cancellation = control.ActivityCancellation


class Orchestration(Protocol):
    """What a bounded call needs of the orchestration's runtime context."""

    codec: Codec
    open: dict[int, CompletableTask[Any]]
    activity_controls: dict[int, ControlledActivityTask]
    at_turn_end: list[Callable[[], None]]

    @property
    def instance_id(self) -> str: ...

    @property
    def current_utc_datetime(self) -> datetime: ...

    @property
    def activity_entity_key(self) -> str: ...

    def next_sequence_id(self) -> int: ...

    def schedule(self, action: PendingAction, task: CompletableTask[Any] | None) -> None: ...

    def create_timer(self, fire_at: datetime | timedelta) -> TimerTask: ...

    def signal_entity(
        self, entity_id: Any, operation_name: str, input: Any = None, signal_time: datetime | None = None
    ) -> None: ...

    def resume(self) -> None: ...


class ActivityCall:
    """What each attempt schedules: the activity's name, encoded input, user tags and version."""

    __slots__ = ("input", "name", "tags", "version")

    def __init__(self, name: str, input: str | None, tags: dict[str, str] | None, version: str | None) -> None:
        self.name = name
        self.input = input
        self.tags = tags
        self.version = version


class ControlledActivityTask(CancellableTask[Any]):
    """The task ``call_activity`` returns when a timeout, a heartbeat timeout or a cancellation type is given."""

    def __init__(
        self,
        rt: Orchestration,
        call: ActivityCall,
        options: control.ActivityOptions,
        retry_policy: RetryPolicy | None,
        return_type: Any,
    ) -> None:
        super().__init__(return_type)
        self._rt = rt
        self._call = call
        self._options = options
        self._policy = retry_policy
        self._first_at = rt.current_utc_datetime
        self._attempt = 0
        self._seq: int | None = None  # the running attempt's task ID
        self._attempt_task: CompletableTask[Any] | None = None
        self._attempt_timers: dict[str, TimerTask] = {}
        self._started = False
        self._last_beat: datetime | None = None
        self._details: str | None = None  # the last heartbeat's details, as JSON text
        self._details_at: tuple[int, int] | None = None  # which heartbeat carried them (see AttemptSettings)
        self._beats_with_details = 0  # of the running attempt
        self._sent_details: str | None = None  # the details the running attempt was scheduled with
        self._retry_timer: TimerTask | None = None
        self._deadline: TimerTask | None = None
        self._cancel_requested = False
        self._reports = RepeatFilter()
        # Whether the running attempt's timeouts are decided at the end of the turn (every attempt this code
        # schedules; not one whose recorded tag predates the rule). A session that keeps the orchestration between
        # turns never sees the recorded scheduling, hence this default.
        self._at_turn_end = True
        self._schedule_attempt()
        if options.schedule_to_close is not None:
            self._deadline = self._timer(self._first_at + options.schedule_to_close)

    @property
    def attempt_count(self) -> int:
        """How many attempts have been scheduled so far."""
        return self._attempt

    # ---- attempts ------------------------------------------------------------------------------
    def _schedule_attempt(self) -> None:
        rt = self._rt
        self._attempt += 1
        seq = rt.next_sequence_id()
        options = self._options
        settings = control.AttemptSettings(
            attempt=self._attempt,
            entity_key=rt.activity_entity_key,
            throttle_seconds=options.throttle().total_seconds(),
            poll_seconds=options.poll().total_seconds(),
            reports_start=options.reports_start,
            details=self._details,
            timeouts=options.timeouts(),
            decides_at_turn_end=True,
        ).fitted(self._details_at)
        call = self._call
        tags = {**(call.tags or {}), control.CONTROL_TAG: settings.to_tag()}
        attempt: CompletableTask[Any] = CompletableTask(self._expected_type)
        attempt._observe(self)
        rt.schedule(ScheduleTask(seq, call.name, call.input, tags, call.version), attempt)
        rt.activity_controls[seq] = self
        self._seq = seq
        self._attempt_task = attempt
        self._at_turn_end = True
        self._sent_details = self._details
        self._beats_with_details = 0
        self._started = False
        if options.schedule_to_start is not None:
            self._arm(control.SCHEDULE_TO_START, rt.current_utc_datetime + options.schedule_to_start)

    def _timer(self, fire_at: datetime) -> TimerTask:
        timer = self._rt.create_timer(fire_at)
        timer._observe(self)
        return timer

    def _arm(self, kind: str, fire_at: datetime) -> None:
        self._attempt_timers[kind] = self._timer(fire_at)

    def _disarm(self, kind: str) -> None:
        timer = self._attempt_timers.pop(kind, None)
        if timer is not None:
            timer.cancel()

    def _end_attempt(self, *, stop: bool) -> None:
        """Forget the running attempt; with ``stop``, its completion is ignored and it is asked to stop."""
        seq = self._seq
        for kind in list(self._attempt_timers):
            self._disarm(kind)
        if seq is None:
            return
        self._seq = None
        self._attempt_task = None
        self._rt.activity_controls.pop(seq, None)
        if stop:
            # The attempt stays scheduled (its action may be on the wire already); its completion is no longer
            # awaited, and a timed-out attempt is told to stop whatever the cancellation type.
            self._rt.open.pop(seq, None)
            self._request_stop(seq)

    def _request_stop(self, seq: int) -> None:
        self._rt.signal_entity(f"@{control.CONTROL_ENTITY}@{self._rt.activity_entity_key}", "cancel", seq)

    def _close(self) -> None:
        for timer in (self._retry_timer, self._deadline):
            if timer is not None:
                timer.cancel()
        self._retry_timer = self._deadline = None

    # ---- events ----------------------------------------------------------------------------------
    def on_scheduled(self, seq: int, tag: str | None) -> None:
        """The attempt ``seq`` was recorded as scheduled, with ``tag``: an attempt recorded before timeouts were
        decided at the end of the turn is replayed with the decision taken at the timer, as it was run."""
        if seq == self._seq and tag and not control.AttemptSettings.from_tag(tag).decides_at_turn_end:
            self._at_turn_end = False

    def on_child_completed(self, task: Task[Any]) -> None:
        if self._is_complete:
            return
        if task is self._attempt_task:
            self._attempt_ended(task)
        elif task.is_failed:
            return  # a timer of ours that was cancelled
        elif task is self._retry_timer:
            self._retry_timer = None
            self._schedule_attempt()
        elif self._at_turn_end and (task is self._deadline or task in self._attempt_timers.values()):
            # The backend may deliver, later in this same turn, a completion, start or heartbeat that was recorded
            # before the timer fired (its queue is in order of arrival, and the timer was queued first): decide once
            # the turn's events are all applied.
            seq = self._seq
            self._rt.at_turn_end.append(lambda: self._timer_fired(task, seq))
        else:
            self._timer_fired(task, self._seq)

    def _timer_fired(self, task: Task[Any], seq: int | None) -> None:
        if self._is_complete or seq != self._seq:
            return  # the attempt ended, or the call did, by an event later in the same turn
        if task is self._deadline:
            self._timed_out(control.SCHEDULE_TO_CLOSE)
            return
        for kind, timer in list(self._attempt_timers.items()):
            if timer is task:
                self._attempt_timer_fired(kind, timer)

    def _attempt_ended(self, attempt: Task[Any]) -> None:
        self._end_attempt(stop=False)
        error = attempt._exception
        if self._cancel_requested:
            self._finish_cancelled()
        elif error is None:
            self._close()
            self._finish(attempt._result, None)
        else:
            proto = getattr(error, "_failure_proto", None)
            assert isinstance(proto, pb.TaskFailureDetails)
            self._attempt_failed(proto, error)

    def _attempt_failed(self, details: pb.TaskFailureDetails, error: BaseException) -> None:
        if self._cancel_requested:
            self._finish_cancelled()
            return
        delay = self._next_delay(details)
        if delay is None:
            self._close()
            self._finish(None, error)
            return
        now = self._rt.current_utc_datetime
        deadline = self._options.schedule_to_close
        if deadline is not None and now + delay >= self._first_at + deadline:
            # The retry could not start before the call's deadline: the deadline ends the call now.
            self._close()
            self._finish(None, self._timeout_error(control.SCHEDULE_TO_CLOSE, None, cause=details))
            return
        self._retry_timer = self._timer(now + delay)

    def _next_delay(self, details: pb.TaskFailureDetails) -> timedelta | None:
        policy = self._policy
        if policy is None or details.isNonRetriable or details.errorType == _CANCELLED_TYPE:
            return None
        now = self._rt.current_utc_datetime
        return policy.next_delay(self._attempt, self._first_at, now, details_from_proto(details))

    def _attempt_timer_fired(self, kind: str, timer: TimerTask) -> None:
        self._attempt_timers.pop(kind, None)
        timeout = self._options.heartbeat
        if kind == control.HEARTBEAT and timeout is not None and self._last_beat is not None:
            expires = self._last_beat + timeout
            if timer.fire_at is not None and expires > timer.fire_at:
                self._arm(control.HEARTBEAT, expires)  # a heartbeat came in time: wait for the next
                return
        self._timed_out(kind)

    def _timed_out(self, kind: str) -> None:
        seq = self._seq
        error = self._timeout_error(kind, seq)
        if seq is not None:
            self._end_attempt(stop=True)
        if kind == control.SCHEDULE_TO_CLOSE:
            self._close()
            self._finish(None, error)
        else:
            self._attempt_failed(error._failure_proto, error)

    def _timeout_error(
        self, kind: str, seq: int | None, cause: pb.TaskFailureDetails | None = None
    ) -> ActivityTimeoutError:
        limit = {
            control.START_TO_CLOSE: self._options.start_to_close,
            control.SCHEDULE_TO_CLOSE: self._options.schedule_to_close,
            control.SCHEDULE_TO_START: self._options.schedule_to_start,
            control.HEARTBEAT: self._options.heartbeat,
        }[kind]
        text = f"activity '{self._call.name}' attempt {self._attempt} timed out: {kind} timeout of {limit} expired"
        if cause is not None:
            text = f"{text} before a retry could start (last failure: {cause.errorMessage})"
        details = pb.TaskFailureDetails(errorType=_TIMEOUT_TYPE, errorMessage=text)
        details.properties["timeoutType"].string_value = kind
        if cause is not None:
            details.innerFailure.CopyFrom(cause)
        where = f"#{seq}" if seq is not None else f"'{self._call.name}'"
        return ActivityTimeoutError(
            f"{self._rt.instance_id}: Activity task {where} failed: {text}",
            details,
            timeout_type=kind,
            last_heartbeat_details=self._decoded_details(),
        )

    def _decoded_details(self) -> Any:
        return None if self._details is None else self._rt.codec.decode(self._details, None)

    def on_control_event(self, report: ControlReport, at: datetime) -> None:
        """An attempt reported its start (``"start"``) or a heartbeat (``"beat"``) at ``at``."""
        seq, kind, details = report.seq, report.kind, report.details
        if seq != self._seq or self._is_complete:
            return  # an attempt given up (or a call that has ended): its reports change nothing
        if not self._reports.fresh(report):
            return  # sent again after a send that seemed to fail but was recorded: counted once
        if kind == "start" and self._started and self._details != self._sent_details:
            # The attempt started again: the backend handed it out anew, its worker lost. That run resumes from
            # the details it was scheduled with, older than the last heartbeat's: an attempt carrying those
            # replaces it (not a failure, so the retry policy is not consulted).
            self._end_attempt(stop=True)
            self._schedule_attempt()
            return
        if not self._started:
            self._on_started(at)
        if kind == "beat":
            if details is not None:
                self._details = details
                self._beats_with_details += 1
                self._details_at = (seq, self._beats_with_details)
            self._last_beat = at

    def _on_started(self, at: datetime) -> None:
        self._started = True
        self._last_beat = at
        self._disarm(control.SCHEDULE_TO_START)
        options = self._options
        if options.start_to_close is not None:
            self._arm(control.START_TO_CLOSE, at + options.start_to_close)
        if options.heartbeat is not None:
            self._arm(control.HEARTBEAT, at + options.heartbeat)

    # ---- cancellation ------------------------------------------------------------------------------
    def cancel(self) -> bool:
        """Cancel the call as its cancellation type says; ``False`` if it had already completed."""
        if self._is_complete:
            return False
        self._is_cancelled = True
        if self._cancel_requested:
            return True
        seq = self._seq
        how = self._options.cancellation
        if seq is not None and how is _Cancellation.WAIT_CANCELLATION_COMPLETED:
            self._cancel_requested = True
            self._request_stop(seq)
            return True
        if seq is not None:
            self._rt.open.pop(seq, None)
            if how is _Cancellation.TRY_CANCEL:
                self._rt.activity_controls.pop(seq, None)
                self._request_stop(seq)
            # An abandoned attempt stays listed (its reports are ignored, as seq is no longer the call's): it may
            # still run when the execution ends, which then tells it (announce_end).
            for kind in list(self._attempt_timers):
                self._disarm(kind)
            self._seq = None
            self._attempt_task = None
        self._finish_cancelled()
        return True

    def _finish_cancelled(self) -> None:
        self._close()
        self._finish(None, TaskCancelledError(f"activity '{self._call.name}' was cancelled"))


#: The largest task ID a control event may name (task IDs are 32-bit on the wire).
_MAX_TASK_ID = 2**31 - 1


def finish_turn(rt: Orchestration) -> None:
    """A turn's events are all applied: take the timeout decisions left for its end, then let the code go on."""
    if rt.at_turn_end:
        decisions, rt.at_turn_end = rt.at_turn_end, []
        for decide in decisions:
            decide()
        rt.resume()


def announce_end(rt: Orchestration) -> None:
    """The execution is ending: if attempts of bounded calls still run, its control entity learns it in this turn
    (one signal), so their workers' batched checks stop them without asking after each orchestration."""
    if rt.activity_controls:
        rt.signal_entity(f"@{control.CONTROL_ENTITY}@{rt.activity_entity_key}", "end")


class ControlReport(NamedTuple):
    """A start or heartbeat report of an attempt, as read from its event."""

    seq: int
    kind: str
    details: str | None
    run: str | None = None
    number: int | None = None


class RepeatFilter:
    """Tells a report apart from one sent again after a send that seemed to fail but was recorded (the same run,
    a number not above the last one counted). The orchestration counts reports through it, and a worker reading
    heartbeats back from the history counts them the same way."""

    def __init__(self) -> None:
        self._run: str | None = None
        self._number = 0

    def fresh(self, report: ControlReport) -> bool:
        """Whether ``report`` counts (and, if numbered, remember it as the last one counted)."""
        if report.number is None:
            return True
        if report.run == self._run and report.number <= self._number:
            return False
        self._run, self._number = report.run, report.number
        return True


def parse_control_event(raw: str | None) -> ControlReport | None:
    """The report in a control event's payload, or ``None`` if it is not one.

    Any client may raise an event under the control event's name, so only what a worker of this SDK sends is
    taken: a JSON object whose task is a JSON integer in the range of task IDs, whose kind is ``start`` or
    ``beat``, whose heartbeat number, if any, is a JSON integer, and whose details, if any, are within the
    heartbeat limit.
    """
    if not raw:
        return None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    seq, kind, details, run, number = (body.get(key) for key in ("task", "kind", "details", "run", "n"))
    if type(seq) is not int or not 0 <= seq <= _MAX_TASK_ID or kind not in ("start", "beat"):
        return None
    if number is not None and type(number) is not int:
        return None
    if isinstance(details, str) and utf8_size(details) > control.MAX_HEARTBEAT_DETAILS_BYTES:
        return None
    return ControlReport(
        seq, kind, details if isinstance(details, str) else None, run if isinstance(run, str) else None, number
    )
