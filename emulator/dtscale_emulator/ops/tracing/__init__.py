"""The emulator's own spans for the work it hands out: what each work item's trace context and phases are.

A work item spends time in three places between a client and a worker: queued in the store until a stream
leases it, out with the worker until its completion arrives, and in the commit of that completion. With
``--otlp-endpoint`` the emulator records one span for each, in the trace the work item carries (the
orchestration's or the activity's parent context), so a trace shows where the time went. This module holds
what those spans are, without OpenTelemetry; :mod:`dtscale_emulator.ops.tracing.otlp` records and exports them.

Entity work items carry no trace context in the protocol (their operations are history events without one),
so they get no spans.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf import timestamp_pb2

from dtscale_emulator.dispatch.streams import Lease
from dtscale_emulator.engine.work import ActivityWork, OrchestrationWork
from dtscale_emulator.protocol import pb
from dtscale_emulator.protocol.trace_context import Parent, from_proto

#: Activities scheduled but not yet leased whose scheduling time is remembered (the oldest are forgotten).
MAX_PENDING_ACTIVITIES = 50_000
#: Instances whose trace is remembered for work items that leave the history out (session continuations).
MAX_KNOWN_TRACES = 50_000

NANOS = 1_000_000_000


def _own_span(message: pb.OrchestratorRequest | pb.OrchestratorResponse) -> int | None:
    """The orchestration's own span ID, which its worker chose on the first turn and the store keeps."""
    if not message.HasField("orchestrationTraceContext"):
        return None
    context = message.orchestrationTraceContext
    if not context.HasField("spanID"):
        return None
    try:
        return int(context.spanID.value, 16) or None
    except ValueError:
        return None


def _ns(stamp: timestamp_pb2.Timestamp) -> int:
    return stamp.seconds * NANOS + stamp.nanos


def visible_ns(event: pb.HistoryEvent) -> int | None:
    """When a new event became deliverable: its timestamp, or later for a timer or a delayed start."""
    if event.HasField("orchestratorStarted") or not event.HasField("timestamp"):
        return None  # the emulator adds orchestratorStarted when it leases the work item
    at = _ns(event.timestamp)
    if event.HasField("timerFired"):
        at = max(at, _ns(event.timerFired.fireAt))
    elif event.HasField("executionStarted") and event.executionStarted.HasField("scheduledStartTimestamp"):
        at = max(at, _ns(event.executionStarted.scheduledStartTimestamp))
    return at


@dataclass(frozen=True, slots=True)
class Execution:
    """What an orchestration work item's spans need from its ``executionStarted`` event."""

    name: str
    parent: Parent | None


def started(events: Iterable[pb.HistoryEvent]) -> Execution | None:
    """The execution's name and trace context, from its ``executionStarted`` event."""
    for event in events:
        if event.HasField("executionStarted"):
            found = event.executionStarted
            context = found.parentTraceContext
            return Execution(found.name, from_proto(context) if found.HasField("parentTraceContext") else None)
    return None


@dataclass(frozen=True, slots=True)
class Phase:
    """One span to record: its name, parent, attributes and times (nanoseconds since the epoch)."""

    name: str
    parent: Parent
    attributes: dict[str, str | int]
    start_ns: int
    end_ns: int
    error: BaseException | None = None


class SpanSink(Protocol):
    """Records finished phases as spans (the OTLP exporter; a list in unit tests)."""

    def record(self, phase: Phase) -> None: ...


@dataclass(frozen=True, slots=True)
class Subject:
    """The work item a span is about: its trace parent, name and attributes."""

    parent: Parent
    name: str
    attributes: dict[str, str | int]


class WorkTracer:
    """Turns the dispatcher's leases and completions into :class:`Phase` spans for ``sink``.

    The dispatcher calls :meth:`dispatched` when it leases a work item and wraps applying its completion in
    :meth:`completing`; both run on the server's loop, but a lock keeps the tables safe from any thread.
    """

    def __init__(self, sink: SpanSink, clock_ns: Callable[[], int]) -> None:
        self._sink = sink
        self.now = clock_ns
        self._lock = threading.Lock()
        # (hub, instance ID, task ID) -> when the turn scheduling that activity committed.
        self._scheduled: dict[tuple[str, str, int], int] = {}
        # (hub, instance ID) -> its execution, for work items sent without the history (session continuations).
        self._executions: dict[tuple[str, str], Execution] = {}

    def dispatched(self, lease: Lease) -> None:
        """Records the queueing span of a work item just leased to a stream: from enqueued to leased."""
        work = lease.work
        enqueued: int | None = None
        if isinstance(work, OrchestrationWork):
            times = [t for t in map(visible_ns, work.request.newEvents) if t is not None]
            enqueued = min(times) if times else None
        elif isinstance(work, ActivityWork):
            key = (lease.hub, work.request.orchestrationInstance.instanceId, work.request.taskId)
            with self._lock:
                enqueued = self._scheduled.pop(key, None)  # taken even when untraced: nothing else will
        subject = self._subject(lease)
        if subject is not None and enqueued is not None:
            attributes = {**subject.attributes, "emulator.stream_id": lease.stream.id}
            self._sink.record(
                Phase(f"emulator.queue:{subject.name}", subject.parent, attributes, enqueued, lease.leased_ns)
            )

    def completing(
        self, lease: Lease, response: pb.OrchestratorResponse | pb.ActivityResponse
    ) -> AbstractContextManager[None]:
        """Wraps applying a completion: records the time out with the worker, then the commit (and its error)."""
        return self._completing(lease, response)

    @contextmanager
    def _completing(self, lease: Lease, response: pb.OrchestratorResponse | pb.ActivityResponse) -> Iterator[None]:
        received = self.now()
        subject = self._subject(lease)
        error: BaseException | None = None
        try:
            yield
        except BaseException as raised:
            error = raised
            raise
        finally:
            committed = self.now()
            if error is None and isinstance(response, pb.OrchestratorResponse):
                assert isinstance(lease.work, OrchestrationWork)
                self._remember_scheduled(lease.hub, lease.work.instance_id, response, committed)
            if subject is not None:
                self._record_completion(lease, subject, response, (lease.leased_ns, received, committed), error)

    def _record_completion(
        self,
        lease: Lease,
        subject: Subject,
        response: pb.OrchestratorResponse | pb.ActivityResponse,
        times: tuple[int, int, int],
        error: BaseException | None,
    ) -> None:
        leased, received, committed = times
        attributes = {**subject.attributes, "emulator.stream_id": lease.stream.id}
        self._sink.record(Phase(f"emulator.dispatch:{subject.name}", subject.parent, attributes, leased, received))
        parent = subject.parent
        attributes = dict(subject.attributes)
        if isinstance(response, pb.OrchestratorResponse):
            # From its first turn on, the orchestration's own span is known: the commit belongs to it.
            own = _own_span(response)
            if own is not None:
                parent = parent.child(own)
            attributes["emulator.actions"] = len(response.actions)
        self._sink.record(Phase(f"emulator.commit:{subject.name}", parent, attributes, received, committed, error))

    def _subject(self, lease: Lease) -> Subject | None:
        work = lease.work
        if isinstance(work, ActivityWork):
            request = work.request
            if not request.HasField("parentTraceContext"):
                return None
            parent = from_proto(request.parentTraceContext)
            attributes: dict[str, str | int] = {
                "durabletask.type": "activity",
                "durabletask.task.name": request.name,
                "durabletask.task.instance_id": request.orchestrationInstance.instanceId,
                "durabletask.task.task_id": request.taskId,
            }
            return None if parent is None else Subject(parent, request.name, _hub(attributes, lease.hub))
        if isinstance(work, OrchestrationWork):
            return self._orchestration(lease.hub, work)
        return None  # entity work items carry no trace context

    def _orchestration(self, hub: str, work: OrchestrationWork) -> Subject | None:
        request = work.request
        key = (hub, work.instance_id)
        execution = started(request.newEvents) or started(request.pastEvents)
        with self._lock:
            if execution is not None:
                self._executions[key] = execution
                _trim(self._executions, MAX_KNOWN_TRACES)
            else:
                execution = self._executions.get(key)
        if execution is None or execution.parent is None:
            return None
        parent = execution.parent
        own = _own_span(request)
        if own is not None:
            parent = parent.child(own)  # after the first turn: children of the orchestration's span
        attributes: dict[str, str | int] = {
            "durabletask.type": "orchestration",
            "durabletask.task.name": execution.name,
            "durabletask.task.instance_id": work.instance_id,
            "emulator.new_events": len(request.newEvents),
        }
        return Subject(parent, execution.name, _hub(attributes, hub))

    def _remember_scheduled(
        self, hub: str, instance_id: str, response: pb.OrchestratorResponse, committed: int
    ) -> None:
        tasks = [a.id for a in response.actions if a.HasField("scheduleTask")]
        if not tasks:
            return
        with self._lock:
            for task_id in tasks:
                self._scheduled[(hub, instance_id, task_id)] = committed
            _trim(self._scheduled, MAX_PENDING_ACTIVITIES)


def _hub(attributes: dict[str, str | int], hub: str) -> dict[str, str | int]:
    attributes["emulator.task_hub"] = hub
    return attributes


def _trim(table: dict[Any, Any], most: int) -> None:
    while len(table) > most:
        del table[next(iter(table))]
