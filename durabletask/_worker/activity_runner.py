"""Running one activity work item: look up, decode input by annotation, call (sync or async), encode."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from durabletask import _trace_context as trace_context
from durabletask import _tracing as tracing
from durabletask._codec import Codec, PayloadSource
from durabletask._errors import exception_message
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import ActivityNotRegisteredError, Registry
from durabletask._replay.activity_control import CONTROL_TAG
from durabletask._replay.contexts import ActivityContext
from durabletask._replay.failures import proto_from_exception
from durabletask._replay.typehints import input_type
from durabletask._streams.producer import ActivityPublisher
from durabletask._worker.heartbeats import AttemptHeartbeats, HeartbeatPump
from durabletask.exception_properties import ExceptionPropertiesProvider, properties_reader

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

_RESULT_FIELD = "activity result"

ContextFactory = Callable[..., Any]
#: Makes the publisher of one activity attempt (``durabletask._worker.streams.StreamTransport.publisher``).
PublisherFactory = Callable[[pb.ActivityRequest, Codec], ActivityPublisher]


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` produces a coroutine (``async def`` functions and callables)."""
    if inspect.iscoroutinefunction(fn):
        return True
    # A callable object: what matters is its __call__ method.
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _closed(publisher: _OnFirstItem) -> None:
    publisher.close()  # nothing was published: closing only marks it closed, without blocking


class _OnFirstItem:
    """An attempt's publisher, made when the activity first publishes: most activities never do, and a publisher
    costs a random run ID, a lock and the stream head's name."""

    __slots__ = ("_closed", "_lock", "_make", "_publisher")

    def __init__(self, make: Callable[[], ActivityPublisher]) -> None:
        self._make = make
        self._publisher: ActivityPublisher | None = None
        self._closed = False
        self._lock = threading.Lock()

    def _get(self) -> ActivityPublisher:
        with self._lock:
            publisher = self._publisher
            if publisher is None:
                publisher = self._publisher = self._make()
                if self._closed:  # publishing after the activity returned: the publisher refuses it as usual
                    publisher.close()
            return publisher

    def publish(self, value: Any, topic: str) -> None:
        self._get().publish(value, topic)

    @property
    def used(self) -> bool:
        publisher = self._publisher
        return publisher is not None and publisher.used

    def close(self) -> None:
        with self._lock:
            self._closed = True
            publisher = self._publisher
        if publisher is not None:
            publisher.close()


class _PlainAttempt:
    """The heartbeats of an attempt of an unbounded call (no control tag): never asked to stop, no details to resume
    from, and a heartbeat only checks its details, so the attempt's state is made only if the activity beats."""

    __slots__ = ("_attempt", "_lock", "_make")

    def __init__(self, make: Callable[[], AttemptHeartbeats]) -> None:
        self._make = make
        self._attempt: AttemptHeartbeats | None = None
        self._lock = threading.Lock()

    @property
    def details(self) -> Any:
        return None

    @property
    def cancelled(self) -> bool:
        return False

    def beat(self, details: Any) -> None:
        with self._lock:
            attempt = self._attempt
            if attempt is None:
                attempt = self._attempt = self._make()
        attempt.beat(details)


class ActivityRunner:
    """Runs activity requests against a registry and builds the ``ActivityResponse`` for each.

    Inputs are rebuilt as the activity's input annotation when that is a model or dataclass (or a
    container of them); other values reach the activity as plain JSON values. User errors never
    escape: they become failure details on the response.
    """

    def __init__(
        self,
        registry: Registry,
        *,
        logger: logging.Logger,
        data_converter: DataConverter | None = None,
        context_factory: ContextFactory = ActivityContext,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
        emit_trace_spans: bool = True,
        payload_limit: int = MAX_PAYLOAD_BYTES,
        payloads: PayloadSource | None = None,
        heartbeats: HeartbeatPump | None = None,
        publishers: PublisherFactory | None = None,
    ) -> None:
        self._registry = registry
        self._heartbeats = heartbeats
        self._publishers = publishers
        self._emit_trace_spans = emit_trace_spans
        self._logger = logger
        self._codec = Codec(data_converter, payload_limit, payloads=payloads)
        self._new_context = context_factory
        self._properties_of = properties_reader(exception_properties_provider, logger)

    def is_async(self, request: pb.ActivityRequest) -> bool:
        """Whether the request's activity is ``async`` and so belongs on an event loop."""
        fn = self._registry.get_activity(request.name)
        return fn is not None and is_async_callable(fn)

    def run(self, request: pb.ActivityRequest, completion_token: str) -> pb.ActivityResponse:
        """Run a synchronous activity on the calling thread."""
        with self._span(request) as span:
            attempt = None
            publisher = self._publisher(request)
            try:
                fn, ctx, value, attempt = self._prepare(request, publisher)
                try:
                    self._begin(attempt)
                    output = fn(ctx, value)
                    del value  # a large input is not kept while the result is encoded and sent
                    if inspect.isawaitable(output):
                        # A plain function handed back an awaitable (e.g. a partial of an async function).
                        output = asyncio.run(_await(output))
                finally:
                    if publisher is not None:
                        publisher.close()  # its items are stored before its result is reported
                encoded = self._encode(request, output)
                del output
                return self._success(request, completion_token, encoded)
            except BaseException as exc:  # SystemExit and the like fail the activity too (see _failure)
                tracing.record_failure(span, exc)
                return self._failure(request, completion_token, exc)
            finally:
                self._end(attempt)

    async def run_async(self, request: pb.ActivityRequest, completion_token: str) -> pb.ActivityResponse:
        """Run an ``async`` activity on the current event loop."""
        with self._span(request) as span:
            attempt = None
            publisher = self._publisher(request)
            try:
                fn, ctx, value, attempt = self._prepare(request, publisher)
                try:
                    if attempt is not None and attempt.settings is not None:
                        await asyncio.to_thread(self._begin, attempt)  # its RPCs would hold up the event loop
                    output = fn(ctx, value)
                    del value
                    if inspect.isawaitable(output):
                        output = await output
                finally:
                    if publisher is not None:  # closed either way: a kept context cannot publish later
                        await (asyncio.to_thread(publisher.close) if publisher.used else _closed(publisher))
                encoded = self._encode(request, output)
                del output
                return self._success(request, completion_token, encoded)
            except asyncio.CancelledError:
                raise  # the worker's loop is going away: the work item is handed back, not failed
            except BaseException as exc:  # as in run()
                tracing.record_failure(span, exc)
                return self._failure(request, completion_token, exc)
            finally:
                self._end(attempt)

    def _span(self, request: pb.ActivityRequest) -> AbstractContextManager[Any]:
        """The activity's SERVER span, child of the CLIENT span the orchestration sent ahead."""
        parent = trace_context.field(request, "parentTraceContext")
        if parent is None and not tracing.recording(self._emit_trace_spans):
            return nullcontext()  # no span to make, no context to carry
        attributes = {
            tracing.ATTR_TYPE: "activity",
            tracing.ATTR_INSTANCE_ID: request.orchestrationInstance.instanceId,
            tracing.ATTR_NAME: request.name,
            tracing.ATTR_TASK_ID: str(request.taskId),
        }
        return tracing.server_span(
            tracing.span_name("activity", request.name), attributes, parent, emit=self._emit_trace_spans
        )

    def _publisher(self, request: pb.ActivityRequest) -> _OnFirstItem | None:
        publishers = self._publishers
        if publishers is None:
            return None
        codec = self._codec
        return _OnFirstItem(lambda: publishers(request, codec))

    def _prepare(
        self, request: pb.ActivityRequest, publisher: _OnFirstItem | None = None
    ) -> tuple[Callable[..., Any], Any, Any, AttemptHeartbeats | None]:
        instance_id = request.orchestrationInstance.instanceId
        fn = self._registry.get_activity(request.name)
        if fn is None:
            raise ActivityNotRegisteredError(f"Activity function named '{request.name}' was not registered!")
        self._logger.debug("%s/%d: running activity '%s'", instance_id, request.taskId, request.name)
        text = request.input.value if request.HasField("input") else None
        value = self._codec.decode(text, self._codec.payload_type(input_type(fn)) if text else None)
        if self._new_context is not ActivityContext:
            return fn, self._new_context(instance_id, request.taskId, publisher=publisher), value, None
        codec = self._codec
        if not request.tags.get(CONTROL_TAG):  # an unbounded call: nothing to report until the activity beats
            plain = _PlainAttempt(lambda: AttemptHeartbeats(request, codec.for_instance(instance_id)))
            return fn, ActivityContext(instance_id, request.taskId, heartbeats=plain, publisher=publisher), value, None
        attempt = AttemptHeartbeats(request, codec.for_instance(instance_id))
        context = ActivityContext(instance_id, request.taskId, heartbeats=attempt, publisher=publisher)
        return fn, context, value, attempt

    def _begin(self, attempt: AttemptHeartbeats | None) -> None:
        """Report a bounded attempt's start; one cancelled (or timed out) before it could start is not started."""
        if attempt is not None and attempt.settings is not None and self._heartbeats is not None:
            self._heartbeats.begin(attempt)
            if attempt.cancelled:
                attempt.beat(None)  # raises ActivityCancelledError

    def _end(self, attempt: AttemptHeartbeats | None) -> None:
        if attempt is not None and attempt.settings is not None and self._heartbeats is not None:
            self._heartbeats.end(attempt)

    def _encode(self, request: pb.ActivityRequest, output: Any) -> str | None:
        codec = self._codec.for_instance(request.orchestrationInstance.instanceId)
        return codec.encode(output, _RESULT_FIELD, finite=True)

    def _success(self, request: pb.ActivityRequest, token: str, encoded: str | None) -> pb.ActivityResponse:
        response = self._response(request, token)
        if encoded is not None:
            response.result.value = encoded  # one copy of the text; a StringValue built apart is copied twice
        self._logger.debug(
            "%s/%d: activity '%s' completed (%d chars of output)",
            response.instanceId,
            request.taskId,
            request.name,
            len(encoded or ""),
        )
        return response

    def _failure(self, request: pb.ActivityRequest, token: str, exc: BaseException) -> pb.ActivityResponse:
        """A failed response for any exception, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included.

        Those end the activity as failed rather than the worker: raised on a pool thread they would otherwise end
        only that thread's job and leave the work item leased, to run and fail again after the lease expires.
        """
        response = self._response(request, token)
        response.failureDetails.CopyFrom(self._failure_details(exc))
        escaped = not isinstance(exc, Exception)
        self._logger.log(
            logging.ERROR if escaped else logging.WARNING,
            "%s/%d: activity '%s' failed: %s: %s%s",
            response.instanceId,
            request.taskId,
            request.name,
            type(exc).__name__,
            exception_message(exc),
            "; the worker does not exit for an exception raised by an activity" if escaped else "",
        )
        return response

    def _failure_details(self, exc: BaseException) -> pb.TaskFailureDetails:
        return proto_from_exception(exc, properties_of=self._properties_of)

    @staticmethod
    def _response(request: pb.ActivityRequest, token: str) -> pb.ActivityResponse:
        return pb.ActivityResponse(
            instanceId=request.orchestrationInstance.instanceId,
            taskId=request.taskId,
            completionToken=token,
        )
