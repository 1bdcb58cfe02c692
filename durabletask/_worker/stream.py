"""The work-item stream: handshake, reading with a silence watchdog, and reconnecting with backoff."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

import grpc
from google.protobuf import empty_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._worker.failures import describe, status_code
from durabletask.grpc_options import GrpcWorkerResiliencyOptions

Stub = Any  # the generated stub's methods are untyped
# Called with a work item, the stub to answer on, and a function to call once the stub is no longer
# needed (the item's channel stays open until then).
WorkItemCallback = Callable[[pb.WorkItem, Stub, Callable[[], None]], None]

# Errors that say nothing about the channel's health (the server answered) do not count towards
# rebuilding it.
_TRANSPORT_FAILURES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Full-jitter exponential backoff: uniform in ``[0, min(cap, base * 2**attempt)]``."""
    ceiling = min(cap, base * (2 ** min(attempt, 32)))
    return random.uniform(0, ceiling)


class SessionEnd(Enum):
    """How one connected session of the stream ended."""

    STOPPED = "stopped"
    CLOSED = "closed"  # the server ended the stream
    SILENT = "silent"  # the watchdog cut a stream that went quiet
    FAILED = "failed"  # the handshake or the stream failed


def _nothing() -> None:
    return None


class ChannelProvider:
    """The channel the worker talks over: the caller's (never closed here) or one it opens and may rebuild.

    Whoever sends on a channel holds it (:meth:`hold`) until done: a rebuilt channel is closed once
    its last holder lets go, so completions of work received on it still reach the backend, and
    retired channels do not pile up however often the channel is rebuilt.
    """

    def __init__(self, channel: grpc.Channel | None, factory: Callable[[], grpc.Channel]) -> None:
        self._given = channel
        self._factory = factory
        self._owned: grpc.Channel | None = None
        self._holders: dict[grpc.Channel, int] = {}
        self._retired: list[grpc.Channel] = []  # rebuilt away, waiting for their holders
        self._lock = threading.Lock()

    @property
    def retired(self) -> int:
        """Rebuilt-away channels still open because work received on them has not finished."""
        with self._lock:
            return len(self._retired)

    def get(self) -> grpc.Channel:
        if self._given is not None:
            return self._given
        with self._lock:
            if self._owned is None:
                self._owned = self._factory()
            return self._owned

    def hold(self, channel: grpc.Channel | None = None) -> tuple[grpc.Channel, Callable[[], None]]:
        """Keep ``channel`` (default: the current one) open until the returned function is called."""
        if self._given is not None:
            return self._given, _nothing
        with self._lock:
            if channel is None:
                if self._owned is None:
                    self._owned = self._factory()
                channel = self._owned
            self._holders[channel] = self._holders.get(channel, 0) + 1
        return channel, _Hold(self, channel)

    def _release(self, hold: _Hold) -> None:
        with self._lock:
            if hold.released:
                return
            hold.released = True
            channel = hold.channel
            count = self._holders.get(channel)
            if count is None:  # already closed by close()
                return
            if count > 1:
                self._holders[channel] = count - 1
                return
            del self._holders[channel]
            if channel not in self._retired:
                return
            self._retired.remove(channel)
        channel.close()

    def rebuild(self) -> bool:
        """Make the next :meth:`get` open a fresh channel; ``False`` for a caller's channel."""
        if self._given is not None:
            return False
        with self._lock:
            previous, self._owned = self._owned, None
            unused = previous is not None and previous not in self._holders
            if previous is not None and not unused:
                self._retired.append(previous)
        if unused and previous is not None:
            previous.close()
        return True

    def close(self) -> None:
        with self._lock:
            channels = [c for c in (self._owned, *self._retired) if c is not None]
            self._owned, self._retired = None, []
            self._holders.clear()
        for channel in channels:
            channel.close()


class _Hold:
    """Lets go of one hold on a channel when called; calling it again does nothing.

    One is made per work item, so it is a slotted object checked under the provider's lock rather than a
    closure over an Event (whose Condition and lock were built for every item).
    """

    __slots__ = ("_provider", "channel", "released")

    def __init__(self, provider: ChannelProvider, channel: grpc.Channel) -> None:
        self._provider = provider
        self.channel = channel
        self.released = False

    def __call__(self) -> None:
        self._provider._release(self)


class Watchdog:
    """Calls ``on_silence`` if armed for longer than ``timeout`` seconds (``0`` disables it).

    The stream arms and disarms it around every read, so both are a plain assignment: waking the watch
    thread twice per work item cost more than the rest of the hand-over. The thread instead sleeps until
    the earliest moment the current arming could expire and looks again; disarmed, it looks once per
    ``timeout``.
    """

    def __init__(self, timeout: float, on_silence: Callable[[], None]) -> None:
        self._timeout = timeout
        self._on_silence = on_silence
        self._armed_at: float | None = None
        self._closed = threading.Event()
        self.fired = False
        if timeout > 0:
            threading.Thread(target=self._watch, name="durabletask-stream-watchdog", daemon=True).start()

    def arm(self) -> None:
        self._armed_at = time.monotonic()

    def disarm(self) -> None:
        self._armed_at = None

    def close(self) -> None:
        self._closed.set()

    def _watch(self) -> None:
        while not self._closed.is_set():
            armed_at = self._armed_at
            remaining = self._timeout if armed_at is None else armed_at + self._timeout - time.monotonic()
            # Still the same arming (no message came in between): it has lasted the whole timeout.
            if remaining <= 0 and armed_at is self._armed_at:
                self.fired = True
                self._on_silence()
                return
            self._closed.wait(max(remaining, 0.0))


class StreamLoop:
    """Keeps a ``GetWorkItems`` stream open until :meth:`stop`, handing each work item to a callback.

    Every stream end other than :meth:`stop` leads to a reconnect after a jittered, capped,
    exponential delay; the delay resets once a stream has delivered a message. The callback runs on
    this loop's thread and may block, which stops reading (backpressure) and pauses the watchdog,
    since a stream we are not reading cannot be judged silent.
    """

    def __init__(
        self,
        *,
        channels: ChannelProvider,
        request: Callable[[], pb.GetWorkItemsRequest],
        on_work_item: WorkItemCallback,
        resiliency: GrpcWorkerResiliencyOptions,
        logger: logging.Logger,
        address: str,
        before_leasing: Callable[[threading.Event], None] | None = None,
    ) -> None:
        self._channels = channels
        # Called after each handshake, before work is asked for, with the loop's stop flag: the worker waits
        # there for results still on their way from before a disconnection.
        self._before_leasing = before_leasing
        self._request = request
        self._on_work_item = on_work_item
        self._resiliency = resiliency
        self._logger = logger
        self._address = address
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._call: Any = None
        self._failures = 0

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self) -> None:
        """End the current stream and the loop; work already handed to the callback is unaffected."""
        self._stopping.set()
        with self._lock:
            call = self._call
        if call is not None:
            call.cancel()

    def run(self) -> None:
        attempt = 0
        while not self._stopping.is_set():
            try:
                end, saw_message = self._session()
            except Exception:
                self._logger.exception("unexpected error in the work-item stream")
                end, saw_message = SessionEnd.FAILED, False
            if end is SessionEnd.STOPPED or self._stopping.is_set():
                break
            attempt = 0 if saw_message else attempt + 1
            delay = backoff_delay(
                attempt,
                self._resiliency.reconnect_backoff_base_seconds,
                self._resiliency.reconnect_backoff_cap_seconds,
            )
            self._logger.info("reconnecting to %s in %.2fs (stream %s)", self._address, delay, end.value)
            if self._stopping.wait(delay):
                break
        self._logger.info("no longer listening for work items from %s", self._address)

    def _track(self, call: Any) -> None:
        """Make ``call`` the one :meth:`stop` cancels (cancelling it at once if stop already happened)."""
        with self._lock:
            self._call = call
        if self._stopping.is_set():
            call.cancel()

    def _connect(self, channel: grpc.Channel) -> tuple[Stub, Any]:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        # As a future, the handshake can be cancelled by stop() instead of holding it for its deadline.
        hello = stub.Hello.future(empty_pb2.Empty(), timeout=self._resiliency.hello_timeout_seconds)
        self._track(hello)
        hello.result()
        if self._before_leasing is not None:
            self._before_leasing(self._stopping)
        call = stub.GetWorkItems(self._request())
        self._track(call)
        return stub, call

    def _session(self) -> tuple[SessionEnd, bool]:
        channel, release = self._channels.hold()
        try:
            return self._connected_session(channel)
        finally:
            release()

    def _connected_session(self, channel: grpc.Channel) -> tuple[SessionEnd, bool]:
        try:
            stub, call = self._connect(channel)
        except grpc.FutureCancelledError:
            return SessionEnd.STOPPED, False
        except grpc.RpcError as error:
            if self._stopping.is_set():
                return SessionEnd.STOPPED, False
            self._logger.warning("could not connect to %s: %s", self._address, describe(error))
            self._record_failure(status_code(error))
            return SessionEnd.FAILED, False
        self._logger.info("connected to %s; waiting for work items", self._address)
        watchdog = Watchdog(self._resiliency.silent_disconnect_timeout_seconds, call.cancel)
        try:
            return self._read(call, channel, stub, watchdog)
        finally:
            watchdog.close()
            with self._lock:
                self._call = None
            # Ends the call if reading stopped for any other reason than the stream ending (no-op then).
            call.cancel()

    def _read(self, call: Any, channel: grpc.Channel, stub: Stub, watchdog: Watchdog) -> tuple[SessionEnd, bool]:
        saw_message = False
        try:
            while True:
                watchdog.arm()
                try:
                    item = next(call)
                except StopIteration:
                    self._logger.info("the server ended the work-item stream")
                    return SessionEnd.CLOSED, saw_message
                finally:
                    watchdog.disarm()
                if not saw_message:
                    saw_message = True
                    self._failures = 0
                _, done = self._channels.hold(channel)
                self._on_work_item(item, stub, done)
        except grpc.RpcError as error:
            if self._stopping.is_set():
                return SessionEnd.STOPPED, saw_message
            if watchdog.fired:
                self._logger.warning(
                    "no message from %s for %gs; treating the stream as dead",
                    self._address,
                    self._resiliency.silent_disconnect_timeout_seconds,
                )
                self._record_failure(grpc.StatusCode.UNAVAILABLE)
                return SessionEnd.SILENT, saw_message
            self._logger.warning("the work-item stream failed: %s", describe(error))
            self._record_failure(status_code(error))
            return SessionEnd.FAILED, saw_message

    def _record_failure(self, code: grpc.StatusCode | None) -> None:
        if code not in _TRANSPORT_FAILURES:
            return
        self._failures += 1
        threshold = self._resiliency.channel_recreate_failure_threshold
        if threshold and self._failures >= threshold and self._channels.rebuild():
            self._logger.warning("rebuilding the channel to %s after %d failures", self._address, self._failures)
            self._failures = 0


def history_fetcher(
    channels: ChannelProvider, timeout: float | None = 60.0
) -> Callable[[pb.OrchestratorRequest], list[pb.HistoryEvent]]:
    """Fetches a work item's past events with ``StreamInstanceHistory`` (for ``requiresHistoryStreaming``)."""

    def fetch(request: pb.OrchestratorRequest) -> list[pb.HistoryEvent]:
        channel, release = channels.hold()
        try:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            query = pb.StreamInstanceHistoryRequest(instanceId=request.instanceId, forWorkItemProcessing=True)
            if request.HasField("executionId"):
                query.executionId.CopyFrom(request.executionId)
            events: list[pb.HistoryEvent] = []
            for chunk in stub.StreamInstanceHistory(query, timeout=timeout):
                events.extend(chunk.events)
            return events
        finally:
            release()

    return fetch
