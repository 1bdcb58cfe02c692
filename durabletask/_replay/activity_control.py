"""The options of a bounded activity call and the wire conventions its orchestration and its worker share.

A call with any of the options is steered by the orchestration over public Durable Task primitives only:
each attempt is an ordinary scheduled task carrying one tag (:data:`CONTROL_TAG`) that tells the worker how to
heartbeat; the worker reports the attempt's start and its heartbeats as external events named
:data:`CONTROL_EVENT` raised at the orchestration; the orchestration asks an attempt to stop by signalling
the control entity (:data:`CONTROL_ENTITY`) of its execution, whose state the worker reads.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

#: The tag on a scheduled attempt that holds its control settings (JSON).
CONTROL_TAG = "dtscale.activity"
#: The name of the external events an attempt raises at its orchestration (its start and its heartbeats).
CONTROL_EVENT = "dtscale.activity"
#: The entity (one per orchestration execution) whose state lists the attempts asked to stop.
CONTROL_ENTITY = "dtscale.activities"
#: The operation on which a control entity deletes itself (its instance was purged).
PURGE_OPERATION = "purge"
#: The largest heartbeat details, as JSON text.
MAX_HEARTBEAT_DETAILS_BYTES = 64 * 1024
#: The longest tag value DTS takes, in characters. Details that would make the control tag longer do not travel
#: in it: the tag names the heartbeat that carried them, and the next attempt's worker reads it from the history.
MAX_TAG_VALUE_CHARS = 4096
#: The share of the heartbeat timeout after which the worker sends the pending heartbeat.
THROTTLE_SHARE = 0.8
#: How often the worker sends heartbeat details at most when no heartbeat timeout is given (each send is a
#: history event of the orchestration).
DEFAULT_THROTTLE = timedelta(seconds=30)
#: How often the worker looks for a cancellation at most (reads only, no history), when that is more often.
POLL_INTERVAL = timedelta(seconds=1)

START_TO_CLOSE = "start_to_close"
SCHEDULE_TO_CLOSE = "schedule_to_close"
SCHEDULE_TO_START = "schedule_to_start"
HEARTBEAT = "heartbeat"


class ActivityCancellation(enum.Enum):
    """What cancelling an activity call (``task.cancel()``) does.

    Attributes:
        TRY_CANCEL: Ask the running activity to stop and fail the call with ``TaskCancelledError`` at once.
        WAIT_CANCELLATION_COMPLETED: Ask the activity to stop; the call fails with ``TaskCancelledError`` only
            once the activity has ended (returned or raised).
        ABANDON: Do not tell the activity; the call fails with ``TaskCancelledError`` at once and the
            activity's result, when it comes, is ignored.
    """

    TRY_CANCEL = "try_cancel"
    WAIT_CANCELLATION_COMPLETED = "wait_cancellation_completed"
    ABANDON = "abandon"


def _positive(name: str, value: timedelta | None) -> timedelta | None:
    if value is None:
        return None
    if not isinstance(value, timedelta):
        raise TypeError(f"{name} must be a datetime.timedelta, not {type(value).__name__}")
    if value <= timedelta(0):
        raise ValueError(f"{name} must be greater than zero, got {value}")
    return value


@dataclass(frozen=True)
class ActivityOptions:
    """The validated timeouts and cancellation type of one bounded activity call."""

    start_to_close: timedelta | None = None
    schedule_to_close: timedelta | None = None
    schedule_to_start: timedelta | None = None
    heartbeat: timedelta | None = None
    cancellation: ActivityCancellation = ActivityCancellation.TRY_CANCEL

    @classmethod
    def build(
        cls,
        start_to_close: timedelta | None,
        schedule_to_close: timedelta | None,
        schedule_to_start: timedelta | None,
        heartbeat: timedelta | None,
        cancellation: ActivityCancellation | None,
    ) -> ActivityOptions | None:
        """The options, or ``None`` when none is given (the call is then an ordinary one)."""
        given = (start_to_close, schedule_to_close, schedule_to_start, heartbeat, cancellation)
        if all(value is None for value in given):
            return None
        if cancellation is not None and not isinstance(cancellation, ActivityCancellation):
            raise TypeError(f"cancellation must be a task.ActivityCancellation, not {cancellation!r}")
        options = cls(
            _positive("start_to_close_timeout", start_to_close),
            _positive("schedule_to_close_timeout", schedule_to_close),
            _positive("schedule_to_start_timeout", schedule_to_start),
            _positive("heartbeat_timeout", heartbeat),
            cancellation or ActivityCancellation.TRY_CANCEL,
        )
        if start_to_close is not None and schedule_to_close is not None and schedule_to_close < start_to_close:
            raise ValueError(
                f"schedule_to_close_timeout ({schedule_to_close}) must not be shorter than "
                f"start_to_close_timeout ({start_to_close}): it bounds all attempts together"
            )
        return options

    @property
    def reports_start(self) -> bool:
        """Whether an attempt must report its start (the timeouts counted from it need the moment)."""
        return self.start_to_close is not None or self.schedule_to_start is not None or self.heartbeat is not None

    def timeouts(self) -> tuple[tuple[str, float], ...]:
        """The given timeouts in seconds, by kind."""
        given = (
            (START_TO_CLOSE, self.start_to_close),
            (SCHEDULE_TO_CLOSE, self.schedule_to_close),
            (SCHEDULE_TO_START, self.schedule_to_start),
            (HEARTBEAT, self.heartbeat),
        )
        return tuple((kind, value.total_seconds()) for kind, value in given if value is not None)

    def throttle(self) -> timedelta:
        """How often a heartbeating attempt sends its details at most."""
        if self.heartbeat is None:
            return DEFAULT_THROTTLE
        return self.heartbeat * THROTTLE_SHARE

    def poll(self) -> timedelta:
        """How often a heartbeating attempt looks for a cancellation at most."""
        return min(self.throttle(), POLL_INTERVAL)


@dataclass(frozen=True)
class AttemptSettings:
    """What the worker learns from an attempt's :data:`CONTROL_TAG`."""

    attempt: int
    entity_key: str
    throttle_seconds: float
    poll_seconds: float
    reports_start: bool
    details: str | None
    #: The call's timeouts in seconds by kind, for tools that show a running attempt (not read by the worker).
    timeouts: tuple[tuple[str, float], ...] = ()
    #: Where ``details`` are when they are too long for the tag: the task ID of the attempt that sent them and
    #: which of its heartbeats with details it was (1 for the first), counted in the orchestration's history.
    details_at: tuple[int, int] | None = None
    #: The orchestration decides the attempt's timeouts once the whole turn in which a timer fired is applied
    #: (recorded in the tag so that attempts recorded before this rule are replayed by the earlier one).
    decides_at_turn_end: bool = False

    def to_tag(self) -> str:
        """The tag's value."""
        body: dict[str, Any] = {
            "attempt": self.attempt,
            "key": self.entity_key,
            "throttle": self.throttle_seconds,
            "poll": self.poll_seconds,
            "start": self.reports_start,
        }
        if self.details is not None:
            body["details"] = self.details
        if self.timeouts:
            body["timeouts"] = dict(self.timeouts)
        if self.details_at is not None:
            body["details_at"] = list(self.details_at)
        if self.decides_at_turn_end:
            body["turn"] = 1
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_tag(cls, text: str) -> AttemptSettings:
        """Read a tag written by :meth:`to_tag`."""
        body = json.loads(text)
        details = body.get("details")
        at = body.get("details_at")
        return cls(
            attempt=int(body["attempt"]),
            entity_key=str(body["key"]),
            throttle_seconds=float(body["throttle"]),
            poll_seconds=float(body.get("poll", body["throttle"])),
            reports_start=bool(body.get("start", False)),
            details=details if isinstance(details, str) else None,
            timeouts=tuple((str(k), float(v)) for k, v in dict(body.get("timeouts") or {}).items()),
            details_at=(int(at[0]), int(at[1])) if isinstance(at, list) and len(at) == 2 else None,
            decides_at_turn_end=bool(body.get("turn", False)),
        )

    def fitted(self, details_at: tuple[int, int] | None) -> AttemptSettings:
        """These settings with their details replaced by ``details_at`` if the tag would be too long for DTS."""
        if self.details is None or details_at is None or len(self.to_tag()) <= MAX_TAG_VALUE_CHARS:
            return self
        return dataclasses.replace(self, details=None, details_at=details_at)


def control_event(
    task_id: int, kind: str, details: str | None = None, *, run: str | None = None, number: int | None = None
) -> str:
    """The payload of a :data:`CONTROL_EVENT` an attempt raises: ``kind`` is ``"start"`` or ``"beat"``.

    ``run`` names the run of the attempt that sends it (a backend may hand an attempt out again) and ``number``
    counts that run's heartbeats: a heartbeat sent again after a failed send whose event was recorded after all
    carries the same pair, and the orchestration counts it once.
    """
    body: dict[str, Any] = {"task": task_id, "kind": kind}
    if details is not None:
        body["details"] = details
    if run is not None:
        body["run"] = run
    if number is not None:
        body["n"] = number
    return json.dumps(body, separators=(",", ":"))


#: The longest control entity key: its entity ID ``@dtscale.activities@{key}`` must fit DTS's 100 characters.
MAX_ENTITY_KEY = 100 - len(CONTROL_ENTITY) - 2
#: The hex digits of the digest that ends a control entity key too long to hold the whole of its execution's.
DIGEST_DIGITS = 32


def entity_key(instance_id: str, execution_id: str) -> str:
    """The control entity's key for one execution (a continued-as-new execution numbers its tasks anew).

    A key that would not fit DTS's cap on entity IDs becomes a readable prefix, ``~`` and the first 32 hex digits
    of the SHA-256 of the whole key (the worker reads the key from the attempt's tag, never rebuilds it).
    """
    key = f"{instance_id}#{execution_id}" if execution_id else instance_id
    if len(key) <= MAX_ENTITY_KEY:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_DIGITS]
    return f"{key[: MAX_ENTITY_KEY - DIGEST_DIGITS - 1]}~{digest}"
