"""Heartbeats of running bounded activities: checked in the activity, sent and answered on a background thread.

An attempt of a bounded call (one carrying the control tag) reports its start and its throttled heartbeats
as external events raised at its orchestration, and learns that it must stop by reading its execution's
control entity and its orchestration's status: public RPCs only (RaiseEvent, GetEntity, GetInstance).
"""

from __future__ import annotations

import json
import logging
import threading
import time
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
from durabletask._worker.heartbeat_details import read_details
from durabletask._worker.stream import ChannelProvider

_LIVE = frozenset(
    {pb.ORCHESTRATION_STATUS_RUNNING, pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_SUSPENDED}
)
#: The deadline of each heartbeat RPC: a slow backend delays heartbeats, never the activity.
RPC_TIMEOUT = 10.0


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
        self._cancelled = False
        self.sends = 0  # heartbeats sent (for tests and benchmarks)
        now = time.monotonic()
        self._next_send = now
        self._next_poll = now + (self.settings.poll_seconds if self.settings else 0.0)
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

    def take_due(self, now: float) -> tuple[bool, str | None, bool]:
        """Whether a heartbeat is due (and its details), and whether a cancellation check is due."""
        settings = self.settings
        assert settings is not None
        with self._lock:
            send = self._has_pending and now >= self._next_send
            details = self._pending
            if send:
                self._has_pending = False
                self._next_send = now + settings.throttle_seconds
        poll = not self._cancelled and now >= self._next_poll
        if poll:
            self._next_poll = now + settings.poll_seconds
        return send, details, poll

    def due(self, now: float) -> bool:
        """Whether anything is due at ``now`` (cheap; no lock)."""
        return (self._has_pending and now >= self._next_send) or (not self._cancelled and now >= self._next_poll)


class HeartbeatPump:
    """Sends the heartbeats of a worker's running attempts and checks whether they must stop.

    One thread looks at the running attempts every ``tick`` seconds and hands what is due to a few sender
    threads, so an activity's ``heartbeat()`` never waits for the network.
    """

    def __init__(
        self, channels: ChannelProvider, logger: logging.Logger, *, tick: float = 0.05, senders: int = 4
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

    def begin(self, attempt: AttemptHeartbeats) -> None:
        """An attempt starts: report its start if its call needs the moment, and check it is still wanted."""
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
        if settings.reports_start:
            self._call(lambda stub: self._raise(stub, attempt, "start", None), attempt)
        self._call(lambda stub: self._poll(stub, attempt), attempt)
        with self._lock:
            self._attempts[id(attempt)] = attempt
            if self._thread is None and not self._stop.is_set():
                self._pool = ThreadPoolExecutor(self._senders, thread_name_prefix="durabletask-heartbeats")
                self._thread = threading.Thread(target=self._run, name="durabletask-heartbeat-pump", daemon=True)
                self._thread.start()

    def end(self, attempt: AttemptHeartbeats) -> None:
        """The attempt has ended: unsent heartbeats are dropped (its result says more)."""
        with self._lock:
            self._attempts.pop(id(attempt), None)

    def close(self) -> None:
        """Stop the thread and the senders (the worker stops)."""
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
                due = [a for a in self._attempts.values() if not a.busy and a.due(now)]
            for attempt in due:
                attempt.busy = True
                assert self._pool is not None
                self._pool.submit(self._serve, attempt, now)

    def _serve(self, attempt: AttemptHeartbeats, now: float) -> None:
        try:
            send, details, poll = attempt.take_due(now)
            if send:
                self._call(lambda stub: self._raise(stub, attempt, "beat", details), attempt)
            if poll:
                self._call(lambda stub: self._poll(stub, attempt), attempt)
        finally:
            attempt.busy = False

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
        if kind == "beat":
            attempt.sends += 1

    @staticmethod
    def _poll(stub: Any, attempt: AttemptHeartbeats) -> None:
        settings = attempt.settings
        assert settings is not None
        entity = stub.GetEntity(
            pb.GetEntityRequest(instanceId=f"@{control.CONTROL_ENTITY}@{settings.entity_key}", includeState=True),
            timeout=RPC_TIMEOUT,
        )
        if entity.exists and entity.entity.serializedState.value:
            state = json.loads(entity.entity.serializedState.value)
            if isinstance(state, dict) and attempt.task_id in state.get("cancelled", []):
                attempt.cancel()
                return
        found = stub.GetInstance(pb.GetInstanceRequest(instanceId=attempt.instance_id), timeout=RPC_TIMEOUT)
        state = found.orchestrationState
        current = state.executionId.value
        if (
            not found.exists
            or state.orchestrationStatus not in _LIVE
            or (attempt.execution_id and current and current != attempt.execution_id)
        ):
            attempt.cancel()


def control_entity(ctx: Any, _: Any) -> None:
    """The built-in entity recording which attempts of one orchestration execution were asked to stop."""
    if ctx.operation != "cancel":
        raise ValueError(f"the activity control entity has no operation {ctx.operation!r}")
    state = ctx.get_state(None, None) or {}
    cancelled = {int(task_id) for task_id in state.get("cancelled", [])}
    cancelled.add(int(ctx.get_input()))
    ctx.set_state({"cancelled": sorted(cancelled)})
