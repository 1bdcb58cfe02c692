"""Running one activity work item: look up, decode input by annotation, call (sync or async), encode."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from google.protobuf import wrappers_pb2

from durabletask import _payload
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._worker.errors import ActivityNotRegisteredError
from durabletask._worker.failures import failure_details
from durabletask._worker.registry import Registry

_RESULT_FIELD = "activity result"


class DataConverter(Protocol):
    """Turns payload strings into values and back (the shape of ``durabletask``'s data converters)."""

    def serialize(self, value: Any) -> str | None: ...

    def deserialize(self, data: str | None, target_type: Any = None) -> Any: ...


ContextFactory = Callable[[str, int], Any]


def _default_context_factory(orchestration_id: str, task_id: int) -> Any:
    # Imported on first use: the public task module imports the worker package in turn.
    task_module = importlib.import_module("durabletask.task")
    return task_module.ActivityContext(orchestration_id, task_id)


def _input_annotation(fn: Callable[..., Any]) -> Any:
    """The annotation of an activity's input parameter (its second), or ``None`` when absent."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if len(params) < 2 or params[1].kind in (params[1].VAR_POSITIONAL, params[1].VAR_KEYWORD):
        return None
    annotation = params[1].annotation
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        # Postponed annotations (``from __future__ import annotations``) arrive as strings.
        target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
        try:
            annotation = typing.get_type_hints(target).get(params[1].name)
        except Exception:
            return None
    return annotation


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` produces a coroutine (``async def`` functions and callables)."""
    if inspect.iscoroutinefunction(fn):
        return True
    # A callable object: what matters is its __call__ method.
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class ActivityRunner:
    """Runs activity requests against a registry and builds the ``ActivityResponse`` for each.

    User errors never escape: they become failure details on the response.
    """

    def __init__(
        self,
        registry: Registry,
        *,
        logger: logging.Logger,
        data_converter: DataConverter | None = None,
        context_factory: ContextFactory | None = None,
    ) -> None:
        self._registry = registry
        self._logger = logger
        self._converter = data_converter
        self._new_context = context_factory or _default_context_factory

    def is_async(self, request: pb.ActivityRequest) -> bool:
        """Whether the request's activity is ``async`` and so belongs on an event loop."""
        fn = self._registry.get_activity(request.name)
        return fn is not None and is_async_callable(fn)

    def run(self, request: pb.ActivityRequest, completion_token: str) -> pb.ActivityResponse:
        """Run a synchronous activity on the calling thread."""
        try:
            fn, ctx, value = self._prepare(request)
            output = fn(ctx, value)
            if inspect.isawaitable(output):
                # A plain function handed back an awaitable (e.g. a partial of an async function).
                output = asyncio.run(_await(output))
            return self._success(request, completion_token, output)
        except Exception as exc:
            return self._failure(request, completion_token, exc)

    async def run_async(self, request: pb.ActivityRequest, completion_token: str) -> pb.ActivityResponse:
        """Run an ``async`` activity on the current event loop."""
        try:
            fn, ctx, value = self._prepare(request)
            output = fn(ctx, value)
            if inspect.isawaitable(output):
                output = await output
            return self._success(request, completion_token, output)
        except Exception as exc:
            return self._failure(request, completion_token, exc)

    def _prepare(self, request: pb.ActivityRequest) -> tuple[Callable[..., Any], Any, Any]:
        instance_id = request.orchestrationInstance.instanceId
        fn = self._registry.get_activity(request.name)
        if fn is None:
            raise ActivityNotRegisteredError(f"Activity function named '{request.name}' was not registered!")
        self._logger.debug("%s/%d: running activity '%s'", instance_id, request.taskId, request.name)
        text = request.input.value if request.HasField("input") else None
        value = self._decode(text, _input_annotation(fn) if text else None)
        return fn, self._new_context(instance_id, request.taskId), value

    def _decode(self, text: str | None, annotation: Any) -> Any:
        if self._converter is not None:
            return self._converter.deserialize(text, annotation)
        return _payload.from_json(text, annotation)

    def _encode(self, value: Any) -> str | None:
        if self._converter is None:
            return _payload.encode(value, field=_RESULT_FIELD)
        text = self._converter.serialize(value)
        _payload.check_size(_RESULT_FIELD, text)
        return text

    def _success(self, request: pb.ActivityRequest, token: str, output: Any) -> pb.ActivityResponse:
        encoded = self._encode(output)
        response = self._response(request, token)
        if encoded is not None:
            response.result.CopyFrom(wrappers_pb2.StringValue(value=encoded))
        self._logger.debug(
            "%s/%d: activity '%s' completed (%d chars of output)",
            response.instanceId,
            request.taskId,
            request.name,
            len(encoded or ""),
        )
        return response

    def _failure(self, request: pb.ActivityRequest, token: str, exc: Exception) -> pb.ActivityResponse:
        response = self._response(request, token)
        response.failureDetails.CopyFrom(failure_details(exc))
        self._logger.warning(
            "%s/%d: activity '%s' failed: %s: %s",
            response.instanceId,
            request.taskId,
            request.name,
            type(exc).__name__,
            exc,
        )
        return response

    @staticmethod
    def _response(request: pb.ActivityRequest, token: str) -> pb.ActivityResponse:
        return pb.ActivityResponse(
            instanceId=request.orchestrationInstance.instanceId,
            taskId=request.taskId,
            completionToken=token,
        )
