"""Failure details and the orchestration-level exceptions that user code can see or catch."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format, struct_pb2

from durabletask._errors import DurableTaskError, exception_message
from durabletask._proto import orchestrator_service_pb2 as pb

# Exceptions are reported by their fully qualified type name. The public names live in
# ``durabletask.task``, so they are named after that module: ``errorType`` strings then match
# what other Durable Task SDKs record.
_TASK_MODULE = "durabletask.task"
_MAX_CAUSE_DEPTH = 10


def qualified_name(error_type: type[BaseException]) -> str:
    """``module.QualName`` of an exception type, the form recorded in ``errorType``."""
    module = getattr(error_type, "__module__", None)
    name = getattr(error_type, "__qualname__", error_type.__name__)
    return f"{module}.{name}" if module else name


@dataclass(frozen=True)
class FailureDetails:
    """Why a task, activity or orchestration failed, as recorded in its history.

    Attributes:
        message: The error message.
        error_type: The fully qualified name of the error type (``module.Class``).
        stack_trace: The stack trace text, when one was recorded.
        inner_failure: The failure that caused this one, if any.
        properties: Extra structured properties attached to the failure.
    """

    message: str
    error_type: str
    stack_trace: str | None
    inner_failure: FailureDetails | None = None
    properties: dict[str, Any] | None = None

    def is_caused_by(self, error_type: str | type[BaseException]) -> bool:
        """Whether this failure's own error type is ``error_type`` (or a subclass of it).

        Args:
            error_type: An exception class (subclasses loaded in this process also match) or a type
                name, fully qualified or bare.
        """
        if isinstance(error_type, str):
            return _names_match(self.error_type, error_type)
        if not (isinstance(error_type, type) and issubclass(error_type, BaseException)):
            raise TypeError(f"is_caused_by() expects an exception type or a type name, not {error_type!r}")
        pending: list[type[BaseException]] = [error_type]
        seen: set[type[BaseException]] = set()
        while pending:
            candidate = pending.pop()
            if candidate in seen:
                continue
            seen.add(candidate)
            if _type_matches(self.error_type, candidate):
                return True
            pending.extend(candidate.__subclasses__())
        return False


def _type_matches(recorded: str, candidate: type[BaseException]) -> bool:
    if not recorded:
        return False
    full = qualified_name(candidate)
    if recorded == full:
        return True
    # A bare recorded name (older SDKs, other languages) can only be compared by class name.
    return "." not in recorded and recorded == full.rsplit(".", 1)[-1]


def _names_match(recorded: str, wanted: str) -> bool:
    if not recorded or not wanted:
        return False
    if recorded == wanted:
        return True
    if "." in recorded and "." in wanted:
        return False
    return recorded.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1]


def details_from_proto(proto: pb.TaskFailureDetails) -> FailureDetails:
    """The public model of a recorded ``TaskFailureDetails`` message."""
    properties: dict[str, Any] | None = None
    if proto.properties:
        properties = {key: json_format.MessageToDict(value) for key, value in proto.properties.items()}
    return FailureDetails(
        message=proto.errorMessage,
        error_type=proto.errorType,
        stack_trace=proto.stackTrace.value if proto.HasField("stackTrace") else None,
        inner_failure=details_from_proto(proto.innerFailure) if proto.HasField("innerFailure") else None,
        properties=properties,
    )


def proto_from_exception(
    error: BaseException,
    properties: Mapping[str, Any] | None = None,
    *,
    properties_of: Callable[[BaseException], Mapping[str, Any] | None] | None = None,
) -> pb.TaskFailureDetails:
    """Failure details for ``error``, following its cause chain (bounded, cycle-safe).

    ``properties`` are recorded for ``error`` itself; ``properties_of`` is asked for every exception in the
    chain (values may be JSON values or ready ``struct_pb2.Value`` messages).
    """
    return _proto_from_exception(error, properties, properties_of, set())


def _proto_from_exception(
    error: BaseException,
    properties: Mapping[str, Any] | None,
    properties_of: Callable[[BaseException], Mapping[str, Any] | None] | None,
    seen: set[int],
) -> pb.TaskFailureDetails:
    seen.add(id(error))
    details = pb.TaskFailureDetails(errorType=qualified_name(type(error)), errorMessage=exception_message(error))
    details.stackTrace.value = "".join(traceback.format_tb(error.__traceback__))
    nested = getattr(error, "_failure_proto", None)
    if isinstance(nested, pb.TaskFailureDetails):
        # A task failure rethrown by the orchestrator keeps the remote failure as its cause.
        details.innerFailure.CopyFrom(nested)
    else:
        cause = error.__cause__ or error.__context__
        if isinstance(cause, Exception) and id(cause) not in seen and len(seen) < _MAX_CAUSE_DEPTH:
            details.innerFailure.CopyFrom(_proto_from_exception(cause, None, properties_of, seen))
    if properties is None and properties_of is not None:
        properties = properties_of(error)
    for key, value in (properties or {}).items():
        target = details.properties[str(key)]
        if isinstance(value, struct_pb2.Value):
            target.CopyFrom(value)
        else:
            target.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
    return details


class TaskFailedError(DurableTaskError):
    """A scheduled task (activity, sub-orchestration, entity call) failed.

    Args:
        message: A description of the failure.
        details: The recorded failure details, or the exception that caused the failure.
    """

    def __init__(self, message: str, details: pb.TaskFailureDetails | BaseException) -> None:
        super().__init__(message)
        if isinstance(details, BaseException):
            nested = getattr(details, "failure_details", None)
            details = proto_from_exception(details)
            if isinstance(nested, pb.TaskFailureDetails):
                # As Microsoft's SDK does: an entity's failure properties also describe the exception
                # that reports it to the orchestration.
                for key, value in nested.properties.items():
                    details.properties[key].CopyFrom(value)
        self._failure_proto = details
        self._details = details_from_proto(details)

    @property
    def details(self) -> FailureDetails:
        """The structured failure details of the task."""
        return self._details


class NonDeterminismError(DurableTaskError):
    """Replaying the orchestrator produced different calls than its recorded history."""


class OrchestrationStateError(DurableTaskError):
    """An operation is not valid in the orchestration's current state."""


class TaskCancelledError(DurableTaskError):
    """The awaited task was cancelled before it completed."""


class EventTimeoutError(DurableTaskError, TimeoutError):
    """An external event did not arrive within the timeout given to ``wait_for_external_event``."""


class ActivityTimeoutError(TaskFailedError, TimeoutError):
    """An activity call ran out of time: one of the timeouts given to ``call_activity`` expired.

    Attributes:
        timeout_type: Which timeout expired: ``"start_to_close"``, ``"schedule_to_close"``,
            ``"schedule_to_start"`` or ``"heartbeat"``.
        last_heartbeat_details: The details of the last heartbeat the orchestration received from the
            activity (any attempt), or ``None`` if it never heartbeated with details.
    """

    def __init__(
        self,
        message: str,
        details: pb.TaskFailureDetails | BaseException,
        *,
        timeout_type: str = "",
        last_heartbeat_details: Any = None,
    ) -> None:
        super().__init__(message, details)
        self.timeout_type = timeout_type
        self.last_heartbeat_details = last_heartbeat_details


class ActivityCancelledError(DurableTaskError):
    """Raised inside an activity by ``ActivityContext.heartbeat()`` once its cancellation was requested.

    The orchestration cancelled the call, the attempt timed out, or the orchestration ended. Let it
    propagate (after any cleanup) so that the activity ends promptly.
    """


for _cls in (
    TaskFailedError,
    NonDeterminismError,
    OrchestrationStateError,
    TaskCancelledError,
    EventTimeoutError,
    ActivityTimeoutError,
    ActivityCancelledError,
):
    _cls.__module__ = _TASK_MODULE
