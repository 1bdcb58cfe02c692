"""The one implementation of a client call and of an operation's calls, as plans of I/O steps.

A plan is a generator: it yields each piece of I/O it needs (invoke the RPC, pause before a retry, rebuild the
channel, move payloads to or from the store) and is sent the result, or thrown the ``grpc.RpcError`` the
invocation raised. Deadlines, retries, error mapping, logging and channel health live here once; the sync and
async clients only perform the steps, each in its own I/O style.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client.base import ClientSettings, deadline_for, describe, time_left
from durabletask._grpc.errors import RpcStatusError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Invoke:
    """Call ``request`` once, with this many seconds left (``None``: no deadline); send back its response."""

    request: rq.RpcRequest
    timeout: float | None


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait this long before the next attempt."""

    seconds: float


@dataclass(frozen=True, slots=True)
class RebuildChannel:
    """The channel looks dead: replace it, when the client made it itself."""


@dataclass(frozen=True, slots=True)
class StorePayloads:
    """Swap the large payloads of an outgoing message for tokens in the payload store."""

    message: Message


@dataclass(frozen=True, slots=True)
class FetchPayloads:
    """Swap the tokens of a response (a message, or a list of streamed ones) for their payloads."""

    response: Any


@dataclass(frozen=True, slots=True)
class Answered:
    """The answer to a call made with its own metadata: the response and the answer's trailing metadata."""

    response: Any
    trailers: tuple[tuple[str, str | bytes], ...]

    def trailer(self, key: str) -> str | None:
        """The last value of ``key`` in the trailing metadata, if any."""
        found = [value for name, value in self.trailers if name == key]
        if not found:
            return None
        return found[-1].decode("utf-8", "replace") if isinstance(found[-1], bytes) else found[-1]


def invoke(method: Any, step: Invoke) -> Any:
    """Make ``step``'s call with a blocking stub method."""
    request = step.request
    if request.metadata:
        response, call = method.with_call(request.request, timeout=step.timeout, metadata=request.metadata)
        return Answered(response, tuple(call.trailing_metadata() or ()))
    result = method(request.request, timeout=step.timeout)
    return list(result) if request.streaming else result


async def invoke_async(method: Any, step: Invoke) -> Any:
    """Make ``step``'s call with an asyncio stub method."""
    request = step.request
    if request.streaming:
        return [chunk async for chunk in method(request.request, timeout=step.timeout)]
    if request.metadata:
        call = method(request.request, timeout=step.timeout, metadata=request.metadata)
        response = await call
        return Answered(response, tuple(await call.trailing_metadata() or ()))
    return await method(request.request, timeout=step.timeout)


Step = Invoke | Pause | RebuildChannel | StorePayloads | FetchPayloads
Plan = Generator[Step, Any, T]


def call(settings: ClientSettings, request: rq.RpcRequest) -> Plan[Any]:
    """One RPC with deadline, retries of idempotent reads, error mapping and channel health."""
    if settings.payloads is not None:
        yield StorePayloads(request.request)
    deadline = deadline_for(request)
    attempt = 0
    while True:
        attempt += 1
        remaining = time_left(deadline)
        if attempt == 1:
            # Reads repeat while a caller polls or pages (a LangGraph client waiting asks GetInstance again
            # and again), so they are DEBUG; a call that changes an instance or entity is what an operator
            # acts on, and stays at INFO as Microsoft's client logs it.
            settings.logger.log(logging.DEBUG if request.idempotent else logging.INFO, "%s", describe(request))
        settings.logger.debug("calling %s (attempt %d, timeout %s)", request.method, attempt, remaining)
        try:
            result = yield Invoke(request, remaining)
        except grpc.RpcError as raw:
            outcome = settings.after_failure(request, raw, attempt, deadline)
            if outcome.rebuild_channel:
                yield RebuildChannel()
            if outcome.pause is None:
                raise outcome.error from raw
            yield Pause(outcome.pause)
            continue
        settings.health.record_success()
        if settings.payloads is not None and not request.keep_payloads:
            yield FetchPayloads(result.response if isinstance(result, Answered) else result)
        return result


def run(settings: ClientSettings, operation: ops.Operation[T]) -> Plan[T]:
    """Every call an operation makes, in turn; a call's failure goes back into the operation to handle."""
    try:
        request = next(operation)
        while True:
            try:
                response = yield from call(settings, request)
            except RpcStatusError as error:
                request = operation.throw(error)
            else:
                request = operation.send(response)
    except StopIteration as done:
        result: T = done.value
        return result


def drive(plan: Plan[T], step: Callable[[Step], Any]) -> T:
    """Carry out ``plan`` with a blocking ``step`` function, feeding each reply or gRPC error back into the plan.

    Args:
        plan: The plan to run to its end.
        step: Performs one step and returns its reply; a ``grpc.RpcError`` it raises goes back into the plan.

    Returns:
        What the plan returns.
    """
    reply: Any = None
    failure: grpc.RpcError | None = None
    while True:
        try:
            next_step = plan.send(reply) if failure is None else plan.throw(failure)
        except StopIteration as done:
            result: T = done.value
            return result
        reply, failure = None, None
        try:
            reply = step(next_step)
        except grpc.RpcError as raw:
            failure = raw
