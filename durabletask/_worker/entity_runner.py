"""Running one entity batch: each operation in turn on the entity's code, with per-operation rollback."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from google.protobuf import timestamp_pb2

from durabletask import _trace_context as trace_context
from durabletask import _tracing as tracing
from durabletask._codec import Codec
from durabletask._errors import exception_message
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import EntityNotRegisteredError, Registry
from durabletask._replay import typehints
from durabletask._replay.failures import proto_from_exception
from durabletask._worker.streams import built_in_entity
from durabletask.entities._state import StateShim
from durabletask.entities.durable_entity import DurableEntity
from durabletask.entities.entity_context import EntityContext
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.exception_properties import ExceptionPropertiesProvider, properties_reader

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

# Helpers every DurableEntity has that are not operations (``delete`` is, and stays callable).
_HELPERS = frozenset(name for name in vars(DurableEntity) if not name.startswith("_")) - {"delete"}


class EntityOperationNotFoundError(AttributeError):
    """A class-based entity has no public method named like the requested operation."""


def _stamp(target: timestamp_pb2.Timestamp, time_ns: int) -> None:
    # Straight from the clock, to the microsecond as a datetime would give: taken twice per operation, and
    # Timestamp.FromDatetime (calendar arithmetic in Python) was a quarter of a 50-operation batch's CPU.
    micros = time_ns // 1000
    target.seconds = micros // 1_000_000
    target.nanos = micros % 1_000_000 * 1000


_OPERATIONS: dict[type[Any], dict[str, str]] = {}


def _operations(cls: type[Any]) -> dict[str, str]:
    """A class's operations: case-folded name → method name (public callables, not the base helpers)."""
    cached = _OPERATIONS.get(cls)
    if cached is not None:
        return cached
    names: dict[str, str] = {}
    for name in dir(cls):
        if name.startswith("_") or (issubclass(cls, DurableEntity) and name in _HELPERS):
            continue
        if callable(getattr(cls, name, None)):
            names.setdefault(name.casefold(), name)
    _OPERATIONS[cls] = names
    return names


@lru_cache(maxsize=1024)
def _takes_input(fn: Callable[..., Any]) -> bool:
    """Whether an unbound method accepts an argument after ``self``."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters)


class EntityRunner:
    """Runs entity batches for the entities in a registry (an ``EntityBatchRunner``).

    Operations run one after another on the same state. An operation that raises gets a failure
    result and its changes (state and outgoing messages) are discarded; the batch goes on.
    """

    def __init__(
        self,
        registry: Registry,
        *,
        logger: logging.Logger | None = None,
        data_converter: DataConverter | None = None,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
        emit_trace_spans: bool = True,
        payload_limit: int = MAX_PAYLOAD_BYTES,
    ) -> None:
        self._registry = registry
        self._emit_trace_spans = emit_trace_spans
        self._logger = logger or logging.getLogger("durabletask-worker")
        self._codec = Codec(data_converter, payload_limit)
        self._properties_of = properties_reader(exception_properties_provider, self._logger)

    def run(
        self, batch: pb.EntityBatchRequest, operation_infos: list[pb.OperationInfo], completion_token: str
    ) -> pb.EntityBatchResult:
        entity_id = EntityInstanceId.parse(batch.instanceId)
        codec = self._codec.for_instance(batch.instanceId)
        encoded = batch.entityState.value if batch.HasField("entityState") else None
        state = StateShim(encoded, is_serialized=True, codec=codec)
        result = pb.EntityBatchResult(completionToken=completion_token)
        # Each operation's result is written in place in the batch's message: built apart and then passed
        # in, every result (and its timestamps) would be copied once per level of nesting.
        results = result.results
        recording = tracing.recording(self._emit_trace_spans)
        for operation in batch.operations:
            self._traced(batch.instanceId, entity_id, operation, state, results.add(), recording)
        result.actions.extend(state.get_operation_actions())
        result.operationInfos.extend(operation_infos[: len(results)])
        if (text := state.encode_state()) is not None:
            result.entityState.value = text
        return result

    def _traced(
        self,
        instance_id: str,
        entity_id: EntityInstanceId,
        operation: pb.OperationRequest,
        state: StateShim,
        out: pb.OperationResult,
        recording: bool,
    ) -> None:
        parent = trace_context.field(operation, "traceContext")
        if parent is None and not recording:
            self._run_one(entity_id, operation, state, out)  # no span to make, no context to carry
            return
        attributes = {
            tracing.ATTR_TYPE: "entity",
            tracing.ATTR_INSTANCE_ID: instance_id,
            tracing.ATTR_NAME: entity_id.entity,
            tracing.ATTR_ENTITY_OPERATION: operation.operation,
        }
        name = tracing.span_name("entity", f"{entity_id.entity}:{operation.operation}")
        with tracing.server_span(name, attributes, parent, emit=self._emit_trace_spans) as span:
            self._run_one(entity_id, operation, state, out, span)

    def _run_one(
        self,
        entity_id: EntityInstanceId,
        operation: pb.OperationRequest,
        state: StateShim,
        out: pb.OperationResult,
        span: Any = None,
    ) -> None:
        started = time.time_ns()
        encoded_input = operation.input.value if operation.HasField("input") else None
        try:
            output = self._invoke(entity_id, operation.operation, encoded_input, state)
            encoded = state.codec.encode(output, "result of entity operation '{}'", operation.operation)
        except BaseException as error:  # SystemExit and the like fail the operation, not the batch
            tracing.record_failure(span, error)
            state.rollback()
            # ERROR with the traceback, as Microsoft's worker logs a failed operation: the failure reaches a
            # caller only as details, and a signal's failure reaches no one.
            self._logger.error(
                "%s: operation '%s' failed: %s: %s",
                entity_id,
                operation.operation,
                type(error).__name__,
                exception_message(error),
                exc_info=error,
            )
            failure = out.failure
            failure.failureDetails.CopyFrom(proto_from_exception(error, properties_of=self._properties_of))
            _stamp(failure.startTimeUtc, started)
            _stamp(failure.endTimeUtc, time.time_ns())
            return
        state.commit()
        success = out.success
        _stamp(success.startTimeUtc, started)
        _stamp(success.endTimeUtc, time.time_ns())
        if encoded is not None:
            success.result.value = encoded

    def _invoke(self, entity_id: EntityInstanceId, operation: str, encoded_input: str | None, state: StateShim) -> Any:
        entity = self._registry.get_entity(entity_id.entity) or built_in_entity(entity_id.entity)
        if entity is None:
            raise EntityNotRegisteredError(f"Entity function named '{entity_id.entity}' was not registered!")
        if isinstance(entity, type):
            return self._invoke_method(entity, entity_id, operation, encoded_input, state)
        value = (
            self._codec.decode(encoded_input, self._codec.payload_type(typehints.input_type(entity, 1)))
            if encoded_input
            else None
        )
        context = EntityContext(
            str(entity_id), operation, state, entity_id, codec=self._codec, encoded_input=encoded_input, input=value
        )
        return _settle(entity(context, value))

    def _invoke_method(
        self, cls: type[Any], entity_id: EntityInstanceId, operation: str, encoded_input: str | None, state: StateShim
    ) -> Any:
        method_name = _operations(cls).get(operation.casefold())
        if method_name is None:
            raise EntityOperationNotFoundError(
                f"entity '{entity_id.entity}' ({cls.__name__}) has no operation named '{operation}'"
            )
        function = getattr(cls, method_name)
        value = (
            self._codec.decode(encoded_input, self._codec.payload_type(typehints.input_type(function, 1)))
            if encoded_input
            else None
        )
        context = EntityContext(
            str(entity_id), operation, state, entity_id, codec=self._codec, encoded_input=encoded_input, input=value
        )
        instance = cls()
        if isinstance(instance, DurableEntity):
            instance._initialize_entity_context(context)
        else:
            instance.entity_context = context
        bound = getattr(instance, method_name)
        if _takes_input(function):
            return _settle(bound(value))
        if value is not None:
            raise TypeError(f"operation '{operation}' of entity '{entity_id.entity}' takes no input")
        return _settle(bound())


def _settle(result: Any) -> Any:
    # An ``async def`` operation runs to completion here: the batch is already on its own thread.
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    return result
