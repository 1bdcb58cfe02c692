"""Failure details and the public task exceptions."""

from __future__ import annotations

import pytest

from durabletask import task
from durabletask._errors import DurableTaskError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import details_from_proto, proto_from_exception


class InsufficientFunds(ValueError):
    pass


def test_exception_chain_becomes_nested_failure_details_with_properties() -> None:
    try:
        try:
            raise KeyError("account")
        except KeyError as inner:
            raise InsufficientFunds("balance too low") from inner
    except InsufficientFunds as error:
        details = details_from_proto(proto_from_exception(error, {"code": 42, "tags": ["a"]}))
    assert details.error_type.endswith("test_failures.InsufficientFunds")
    assert details.message == "balance too low"
    assert details.stack_trace and "raise InsufficientFunds" in details.stack_trace
    assert details.inner_failure is not None and details.inner_failure.error_type == "builtins.KeyError"
    assert details.properties == {"code": 42, "tags": ["a"]}


def test_is_caused_by_understands_types_subclasses_and_names() -> None:
    details = details_from_proto(proto_from_exception(InsufficientFunds("x")))
    assert details.is_caused_by(InsufficientFunds)
    assert details.is_caused_by(ValueError)
    assert not details.is_caused_by(KeyError)
    assert details.is_caused_by("InsufficientFunds")
    assert details.is_caused_by(details.error_type)
    assert not details.is_caused_by("other.module.InsufficientFunds")
    bare = task.FailureDetails(message="m", error_type="TimeoutException", stack_trace=None)
    assert bare.is_caused_by("System.TimeoutException")
    with pytest.raises(TypeError):
        details.is_caused_by(int)  # type: ignore[arg-type]


def test_task_failed_error_exposes_recorded_details() -> None:
    error = task.TaskFailedError("activity failed", pb.TaskFailureDetails(errorType="builtins.OSError",
                                                                          errorMessage="disk"))
    assert error.details.message == "disk"
    assert error.details.is_caused_by(OSError)
    assert str(error) == "activity failed"


@pytest.mark.parametrize("error_type", [task.TaskFailedError, task.NonDeterminismError,
                                        task.OrchestrationStateError, task.TaskCancelledError])
def test_public_errors_share_the_sdk_root_and_report_the_public_module(error_type: type[Exception]) -> None:
    assert issubclass(error_type, DurableTaskError)
    assert issubclass(error_type, Exception)
    assert error_type.__module__ == "durabletask.task"


def test_event_timeouts_are_timeout_errors() -> None:
    assert issubclass(task.EventTimeoutError, TimeoutError)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


@pytest.mark.adversarial
def test_an_error_whose_str_raises_is_still_described_by_its_type() -> None:
    try:
        raise _Unprintable from SystemExit(2)
    except _Unprintable as error:
        details = proto_from_exception(error)
    assert details.errorType.endswith("._Unprintable")
    assert details.errorMessage == "_Unprintable (its message could not be read: str() raised RuntimeError)"
    assert details.stackTrace.value  # the traceback is kept


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt(), GeneratorExit("closed")])
def test_exceptions_outside_exception_are_described_like_any_other(error: BaseException) -> None:
    details = proto_from_exception(error)
    assert details.errorType == f"builtins.{type(error).__name__}"
    assert details.errorMessage == str(error)
