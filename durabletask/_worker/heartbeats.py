"""Heartbeats of running bounded activities: checked in the activity, sent and answered on a background thread.

An attempt of a bounded call (one carrying the control tag) reports its start and its throttled heartbeats
as external events raised at its orchestration (RaiseEvent), and learns that it must stop from the worker's
batched checks (attempt_checks.py): public RPCs only.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from durabletask._codec import Codec
from durabletask._errors import DurableTaskError, PayloadTooLargeError, SerializationError
from durabletask._json_codec import utf8_size
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._replay import activity_control as control
from durabletask._replay.failures import ActivityCancelledError
from durabletask._worker.attempt_checks import RPC_TIMEOUT, StopChecks, first_fallback
from durabletask._worker.heartbeat_details import read_details
from durabletask._worker.stream import ChannelProvider

#: How soon a heartbeat whose send failed is sent again (sooner when the throttle is shorter).
RETRY_SECONDS = 1.0
#: Heartbeat sends awaiting their answer at most, per worker.
MAX_IN_FLIGHT = 64


class AttemptHeartbeats:
    """One running attempt's side of ``ActivityContext.heartbeat`` (a ``HeartbeatChannel``)."""

    def __init__(self, request: pb.ActivityRequest, codec: Codec) -> None:
        self.instance_id = request.orchestrationInstance.instanceId
        self.execution_id = request.orchestrationInstance.executionId.value
        self.task_id = request.taskId
        tag = request.tags.get(control.CONTROL_TAG)
        self.settings = control.AttemptSettings.from_tag(tag) if tag else None
        self._codec = codec
        #: Details too long for the tag, once read from the history (see :mod:`heartbeat_details`).
        self.resolved_details: str | None = None
        self._lock = threading.Lock()
        self._pending: str | None = None
        self._has_pending = False
        self._pending_number: int | None = None  # set while the pending details are a failed send's, to resend
        self._numbered = 0  # heartbeats numbered for sending so far
        self.run = uuid.uuid4().hex[:12]  # this run of the attempt (a backend may hand the attempt out again)
        self._cancelled = False
        self.sends = 0  # heartbeats sent and acknowledged (for tests and benchmarks)
        now = time.monotonic()
        self._next_send = now
        self.next_fallback = first_fallback(now)  # the slow per-attempt check (see attempt_checks.py)
        self.busy = False

    @property
    def details(self) -> Any:
        settings = self.settings
        text = None if settings is None else settings.details or self.resolved_details
        return None if text is None else self._codec.decode(text)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Mark the attempt as asked to stop."""
        self._cancelled = True

    def beat(self, details: Any) -> None:
        encoded = self._encode(details)
        if self._cancelled:
            raise ActivityCancelledError(
                f"activity task #{self.task_id} of '{self.instance_id}' was asked to stop (cancelled, timed out, "
                "or its orchestration ended)"
            )
        if self.settings is None:
            return
        with self._lock:
            self._pending = encoded
            self._has_pending = True
            self._pending_number = None  # newer details: a failed send they replace is not sent again

    def _encode(self, details: Any) -> str | None:
        try:
            text = self._codec.encode(details, "heartbeat details")
        except DurableTaskError:
            raise
        except (TypeError, ValueError) as error:
            raise SerializationError(f"heartbeat details cannot be serialized: {error}") from error
        if text is not None:
            size = utf8_size(text)
            if size > control.MAX_HEARTBEAT_DETAILS_BYTES:
                raise PayloadTooLargeError(
                    "heartbeat details", size, control.MAX_HEARTBEAT_DETAILS_BYTES, self.instance_id
                )
        return text

    def take_due(self, now: float) -> tuple[bool, str | None, int]:
        """Whether a heartbeat is due, its details (the latest given, coalesced since the last send) and its number
        (a failed send's, when it is sent again)."""
        settings = self.settings
        assert settings is not None
        with self._lock:
            send = self._has_pending and now >= self._next_send
            details, number = self._pending, self._pending_number
            if send:
                self._has_pending = False
                self._next_send = now + settings.throttle_seconds
                if number is None:
                    self._numbered += 1
                    number = self._numbered
        return send, details, number if number is not None else 0

    def failed(self, details: str | None, number: int, now: float) -> None:
        """A send failed (perhaps after its event was recorded): send it again soon, with the same number, unless
        newer details have replaced it meanwhile."""
        settings = self.settings
        assert settings is not None
        with self._lock:
            if self._has_pending:
                return  # coalesced into the newer details, which go at the next send
            self._pending, self._pending_number, self._has_pending = details, number, True
            self._next_send = now + min(settings.throttle_seconds, RETRY_SECONDS)

    def due(self, now: float) -> bool:
        """Whether a heartbeat is due at ``now`` (cheap; no lock)."""
        return self._has_pending and now >= self._next_send


class HeartbeatPump:
    """Sends the heartbeats of a worker's running attempts and checks whether they must stop.

    One thread looks at the running attempts every ``tick`` seconds and sends what is due without waiting for
    the answers (up to MAX_IN_FLIGHT at once), so an activity's ``heartbeat()`` never waits for the network.
    Whether attempts must stop is checked for all of them at once, once per poll interval (the shortest of the
    running attempts'), on a few threads of their own (``senders``).
    """

    def __init__(
        self, channels: ChannelProvider, logger: logging.Logger, *, tick: float = 0.05, senders: int = 2
    ) -> None:
        self._channels = channels
        self._logger = logger
        self._tick = tick
        self._senders = senders
        self._attempts: dict[int, AttemptHeartbeats] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.checks = StopChecks(logger)
        self._looking = False
        self._next_look = 0.0
        self._slots = threading.Semaphore(MAX_IN_FLIGHT)  # one per heartbeat send awaiting its answer
        self._stub_for: Any = None
        self._stub_channel: grpc.Channel | None = None

    def begin(self, attempt: AttemptHeartbeats) -> None:
        """An attempt starts: report its start if its call needs the moment, and check it is still wanted.

        It is registered before its own check, so a stop requested after that check is seen by the next look.
        """
        settings = attempt.settings
        if settings is None:
            return
        if settings.details is None and settings.details_at is not None:
            at = settings.details_at
            channel, release = self._channels.hold()
            try:
                stub = pb_grpc.TaskHubSidecarServiceStub(channel)
                attempt.resolved_details = read_details(stub, attempt.instance_id, attempt.execution_id, at)
            finally:
                release()
        with self._lock:
            self._attempts[id(attempt)] = attempt
            if self._thread is None and not self._stop.is_set():
                self._pool = ThreadPoolExecutor(self._senders, thread_name_prefix="durabletask-heartbeats")
                self._thread = threading.Thread(target=self._run, name="durabletask-heartbeat-pump", daemon=True)
                self._thread.start()
        if settings.reports_start:
            self._call(lambda stub: self._raise(stub, attempt, "start", None), attempt)
        self._call(lambda stub: self.checks.check_one(stub, attempt), attempt)

    def end(self, attempt: AttemptHeartbeats) -> None:
        """The attempt has ended: unsent heartbeats are dropped (its result says more)."""
        with self._lock:
            self._attempts.pop(id(attempt), None)

    def close(self) -> None:
        """Stop the thread and the checks (the worker stops)."""
        self._stop.set()
        thread, pool = self._thread, self._pool
        if thread is not None:
            thread.join()
        if pool is not None:
            pool.shutdown(wait=True)

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            now = time.monotonic()
            with self._lock:
                running = list(self._attempts.values())
            for attempt in running:
                if not attempt.busy and attempt.due(now):
                    if not self._slots.acquire(blocking=False):
                        break  # the rest stay due: a later tick sends them
                    self._send_beat(attempt, now)
            watched = [a for a in running if not a.cancelled]
            if watched and not self._looking and now >= self._next_look:
                self._looking = True
                self._next_look = now + min(a.settings.poll_seconds for a in watched if a.settings is not None)
                assert self._pool is not None
                self._pool.submit(self._look, watched, now)

    def _send_beat(self, attempt: AttemptHeartbeats, now: float) -> None:
        """Send the attempt's due heartbeat without waiting for the answer: many are in flight at once."""
        send, details, number = attempt.take_due(now)
        if not send:
            self._slots.release()
            return
        attempt.busy = True  # one send at a time per attempt, so its heartbeats arrive in order
        channel, release = self._channels.hold()
        request = pb.RaiseEventRequest(instanceId=attempt.instance_id, name=control.CONTROL_EVENT)
        request.input.value = control.control_event(attempt.task_id, "beat", details, run=attempt.run, number=number)

        def answered(call: Any) -> None:
            try:
                call.result()
                attempt.sends += 1
            except grpc.RpcError as error:
                # Perhaps recorded all the same: the resend carries the same number, and is counted once.
                self._logger.debug("%s/%d: heartbeat not sent: %s", attempt.instance_id, attempt.task_id, error)
                attempt.failed(details, number, time.monotonic())
            finally:
                release()
                self._slots.release()
                attempt.busy = False

        try:
            call = self._stub(channel).RaiseEvent.future(request, timeout=RPC_TIMEOUT)
        except Exception as error:  # e.g. a channel closed under us: the pump thread must go on
            self._logger.debug("%s/%d: heartbeat not sent: %s", attempt.instance_id, attempt.task_id, error)
            release()
            self._slots.release()
            attempt.busy = False
            attempt.failed(details, number, now)
            return
        call.add_done_callback(answered)

    def _stub(self, channel: grpc.Channel) -> Any:
        # Building a stub makes a callable per RPC of the service: one per channel, not one per heartbeat.
        if self._stub_channel is not channel:
            self._stub_for, self._stub_channel = pb_grpc.TaskHubSidecarServiceStub(channel), channel
        return self._stub_for

    def _look(self, attempts: list[AttemptHeartbeats], now: float) -> None:
        channel, release = self._channels.hold()
        try:
            self.checks.look(pb_grpc.TaskHubSidecarServiceStub(channel), attempts, now)
        except grpc.RpcError as error:
            # A missed look is made up by the next: it reads from where the last complete one got to.
            self._logger.debug("checking whether running activities must stop failed: %s", error)
        finally:
            release()
            self._looking = False

    def _call(self, rpc: Any, attempt: AttemptHeartbeats) -> None:
        channel, release = self._channels.hold()
        try:
            rpc(pb_grpc.TaskHubSidecarServiceStub(channel))
        except grpc.RpcError as error:
            # A lost heartbeat is made up by the next; a missed check, by the next check.
            self._logger.debug("%s/%d: heartbeat RPC failed: %s", attempt.instance_id, attempt.task_id, error)
        finally:
            release()

    @staticmethod
    def _raise(stub: Any, attempt: AttemptHeartbeats, kind: str, details: str | None) -> None:
        request = pb.RaiseEventRequest(instanceId=attempt.instance_id, name=control.CONTROL_EVENT)
        request.input.value = control.control_event(attempt.task_id, kind, details)
        stub.RaiseEvent(request, timeout=RPC_TIMEOUT)


def control_entity(ctx: Any, _: Any) -> None:
    """The built-in entity recording which attempts of one orchestration execution were asked to stop
    (``cancel``, its input a task ID), and whether the execution has ended (``end``: all of them); ``purge``
    deletes it (its instance was purged)."""
    if ctx.operation == control.PURGE_OPERATION:
        ctx.delete_state()
        return
    if ctx.operation not in ("cancel", "end"):
        raise ValueError(f"the activity control entity has no operation {ctx.operation!r}")
    state = dict(ctx.get_state(None, None) or {})
    if ctx.operation == "end":
        state["ended"] = True
    else:
        cancelled = {int(task_id) for task_id in state.get("cancelled", [])}
        cancelled.add(int(ctx.get_input()))
        state["cancelled"] = sorted(cancelled)
    ctx.set_state(state)
