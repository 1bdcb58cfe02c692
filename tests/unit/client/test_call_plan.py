"""The one call plan both clients perform: its steps, retries and errors, without a channel."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from durabletask._client import call_plan
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client.base import ClientSettings
from durabletask._grpc.errors import RpcStatusError
from durabletask._proto import orchestrator_service_pb2 as pb


class _Failure(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return f"{self._code.name} from the test"


def _settings() -> ClientSettings:
    return ClientSettings(
        log_name="client-plan-test", host_address="localhost:1", metadata=None, log_handler=None,
        log_formatter=None, logger=None, secure_channel=False, channel_options=None, resiliency_options=None,
        default_version=None, payload_store=None, data_converter=None, emit_trace_spans=False,
    )  # fmt: skip


def _drive(plan: call_plan.Plan[Any], answers: list[Any]) -> tuple[list[str], Any]:
    """Performs a plan with scripted invocation answers (an RpcError is raised into it)."""
    seen: list[str] = []
    reply: Any = None
    failure: grpc.RpcError | None = None
    while True:
        try:
            step = plan.send(reply) if failure is None else plan.throw(failure)
        except StopIteration as done:
            return seen, done.value
        seen.append(type(step).__name__)
        reply, failure = None, None
        if isinstance(step, call_plan.Invoke):
            answer = answers.pop(0)
            if isinstance(answer, grpc.RpcError):
                failure = answer
            else:
                reply = answer


def test_a_call_invokes_once_and_returns_the_response() -> None:
    request = rq.build_get_orchestration_state_request("i")
    response = pb.GetInstanceResponse(exists=True)
    steps, result = _drive(call_plan.call(_settings(), request), [response])
    assert steps == ["Invoke"] and result is response


def test_an_idempotent_read_pauses_and_tries_again_after_a_transient_failure() -> None:
    request = rq.build_get_orchestration_state_request("i")
    response = pb.GetInstanceResponse(exists=False)
    steps, result = _drive(call_plan.call(_settings(), request), [_Failure(grpc.StatusCode.UNAVAILABLE), response])
    assert steps[0] == "Invoke" and steps[-1] == "Invoke" and "Pause" in steps
    assert result is response


def test_a_refused_call_raises_the_mapped_error_without_retrying() -> None:
    request = rq.build_get_orchestration_state_request("i")
    with pytest.raises(RpcStatusError, match="INVALID_ARGUMENT") as caught:
        _drive(call_plan.call(_settings(), request), [_Failure(grpc.StatusCode.INVALID_ARGUMENT)])
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_operation_gets_its_calls_failure_and_decides() -> None:
    def operation() -> ops.Operation[str]:
        try:
            yield rq.build_get_orchestration_state_request("i")
        except RpcStatusError as error:
            return f"handled {error.code().name}"
        return "not reached"

    steps, result = _drive(call_plan.run(_settings(), operation()), [_Failure(grpc.StatusCode.NOT_FOUND)])
    assert (steps, result) == (["Invoke"], "handled NOT_FOUND")
