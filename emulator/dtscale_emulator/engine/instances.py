"""Instance operations as storage transactions: client requests, work fetching and work completion."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from itertools import chain

from dtscale_emulator.engine import delivery, entity_ops, events, outbox, work_size
from dtscale_emulator.engine.actions.base import ContinueAsNew, Transition
from dtscale_emulator.engine.changes import ChangeFeed, ChangeSubscriber
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.state_machine import advance
from dtscale_emulator.engine.work import ActivityWork, Affinity, OrchestrationWork, SessionMark
from dtscale_emulator.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    NotFoundError,
    ResourceExhaustedError,
    stale_token,
)
from dtscale_emulator.ops.clock import Clock
from dtscale_emulator.protocol import Value, pb
from dtscale_emulator.protocol.extensions import INCLUDE_PAST_EVENTS
from dtscale_emulator.storage import Backend, InstanceQueryArgs, InstanceRecord, NameFilter, Transaction

_CANDIDATES = 64
#: Past events larger than this (serialized) are left out of a work item for a worker that can stream
#: them; well below gRPC's default 4 MiB message limit, leaving room for the new events.
DEFAULT_HISTORY_STREAMING_THRESHOLD = 1024 * 1024
_HISTORY_CHUNK_BYTES = 1024 * 1024
_HISTORY_CHUNK_EVENTS = 200


def _parse(raw: Sequence[bytes]) -> list[pb.HistoryEvent]:
    return [pb.HistoryEvent.FromString(b) for b in raw]


def _past_if_needed(
    tx: Transaction, hub: str, work: OrchestrationWork, new_events: Sequence[pb.HistoryEvent]
) -> list[pb.HistoryEvent]:
    """The stored history, read only when the state machine needs it (a recursive termination)."""
    if any(e.HasField("executionTerminated") and e.executionTerminated.recurse for e in new_events):
        return _parse(_stored_history(tx, hub, work.instance_id))
    return []


def _stored_history(tx: Transaction, hub: str, instance_id: str) -> list[bytes]:
    return events.without_orchestrator_completed(tx.history(hub, instance_id))


def _new_work_kinds(transition: Transition, pending: bool, released: bool) -> tuple[str, ...] | None:
    """The work kinds a turn can have made available, or None when it may have made any (or timed) work.

    Args:
        pending: Events for the instance arrived while it was out for this turn, so it is runnable again.
        released: The turn ended the instance while it held entity locks, which may let others through.
    """
    box = transition.outbox
    if (
        released
        or transition.continue_as_new is not None
        or transition.rewound_history is not None
        or box.timers
        or box.instances
        or box.messages
        or box.terminations
        or box.entity_messages
    ):
        return None
    kinds = ("orchestration",) if pending and not transition.terminal else ()
    return (*kinds, "activity") if box.activities else kinds


class Engine:
    """Turns requests into storage transactions and reports every committed change to ``changes``."""

    def __init__(
        self,
        backend: Backend,
        clock: Clock,
        changes: ChangeSubscriber | None = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        max_history_events: int | None = None,
    ) -> None:
        self.max_history_events = max_history_events
        self.backend = backend
        self.clock = clock
        self.changes: ChangeSubscriber = changes if changes is not None else ChangeFeed()
        self.new_id = new_id
        self.history_streaming_threshold = DEFAULT_HISTORY_STREAMING_THRESHOLD
        #: The most a work item may be, serialized: what a worker receives by default.
        self.max_work_item_bytes = work_size.WORK_ITEM_BYTES
        # Observability for tests and benchmarks: work items sent without their history, because it
        # was large (the worker streams it) or because the worker holds the orchestration live.
        self.streamed_histories = 0
        self.continued_sessions = 0

    def _changed(self, hub: str, instance_id: str | None = None) -> None:
        self.changes.work_changed(hub)
        self.changes.instance_changed(hub, instance_id)

    # Client operations -----------------------------------------------------------------------------
    def create(self, hub: str, opts: StartOptions) -> str:
        now = self.clock.now()
        with self.backend.transaction() as tx:
            existing = tx.get_instance(hub, opts.instance_id)
            if existing is not None:
                self._replace_or_reject(tx, existing, opts.replaceable, now)
            delivery.insert_instance(tx, hub, opts, now, self.new_id())
        if existing is None and opts.scheduled_start is None:
            # A new instance that can start now is orchestration work and nothing else.
            self.changes.work_changed(hub, ("orchestration",), {"orchestration": frozenset((opts.name,))})
            self.changes.instance_changed(hub, opts.instance_id)
        else:
            self._changed(hub, opts.instance_id)
        return opts.instance_id

    @staticmethod
    def _replace_or_reject(
        tx: Transaction, existing: InstanceRecord, replaceable: Sequence[int] | None, now: datetime
    ) -> None:
        # A policy with an empty list replaces nothing; only a missing policy means "any finished instance".
        allowed = set(events.TERMINAL_STATUSES) if replaceable is None else set(replaceable)
        if existing.status not in allowed:
            status = pb.OrchestrationStatus.Name(existing.status)
            raise AlreadyExistsError(
                f"an orchestration instance with ID '{existing.instance_id}' already exists with status {status}"
            )
        if not delivery.is_terminal(existing):
            # Terminated first, so its parent hears about it and its entity locks are freed.
            outbox.finish_terminated(tx, existing, "replaced by a new instance with the same ID", now, False)
        tx.delete_instance(existing.hub, existing.instance_id)

    def get(self, hub: str, instance_id: str) -> InstanceRecord | None:
        return self.backend.read_instance(hub, instance_id)

    def _require(self, tx: Transaction, hub: str, instance_id: str) -> InstanceRecord:
        record = tx.get_instance(hub, instance_id)
        if record is None:
            raise NotFoundError(f"no orchestration instance with ID '{instance_id}' was found")
        return record

    def raise_event(self, hub: str, instance_id: str, name: str, data: str | None) -> None:
        now = self.clock.now()
        runnable: str | None = None  # the instance's name, when the event makes it runnable now
        with self.backend.transaction() as tx:
            record = self._require(tx, hub, instance_id)
            if delivery.is_terminal(record):
                return  # a finished instance drops the event: no work was made
            raised = events.event_raised(now, name, data)
            visible = delivery.message_time(record, now)
            tx.add_message(hub, instance_id, raised.SerializeToString(), visible)
            if visible <= events.to_micros(now):
                runnable = record.name
        if runnable is None:
            self.changes.work_changed(hub)  # seen only once a scheduled start comes: timed work
        else:
            self.changes.work_changed(hub, ("orchestration",), {"orchestration": frozenset((runnable,))})

    def terminate(self, hub: str, instance_id: str, reason: str | None, recursive: bool) -> None:
        with self.backend.transaction() as tx:
            record = tx.get_instance(hub, instance_id)
            if record is None or not outbox.terminate(tx, hub, instance_id, reason, recursive, self.clock.now()):
                raise NotFoundError(f"no orchestration instance with ID '{instance_id}' was found")
        # Only the instance's own turn can have become work (children are terminated by what that turn does).
        self.changes.work_changed(hub, ("orchestration",), {"orchestration": frozenset((record.name,))})
        self.changes.instance_changed(hub, None)

    def force_terminate(self, hub: str, instance_ids: Sequence[str], reason: str | None) -> list[str]:
        """Terminates instances at once, without a final orchestrator turn; returns the IDs left alone.

        Instances that do not exist or have already finished are returned as not terminated.
        """
        skipped: list[str] = []
        now = self.clock.now()
        with self.backend.transaction() as tx:
            for instance_id in instance_ids:
                record = tx.get_instance(hub, instance_id)
                if record is None or delivery.is_terminal(record):
                    skipped.append(instance_id)
                    continue
                started = bool(tx.history(hub, instance_id))
                outbox.finish_terminated(tx, record, reason, now, record_history=started)
        self._changed(hub)
        return skipped

    def suspend(self, hub: str, instance_id: str, reason: str | None, resume: bool = False) -> None:
        """Queues executionSuspended (or executionResumed) for the orchestrator to observe."""
        now = self.clock.now()
        with self.backend.transaction() as tx:
            record = self._require(tx, hub, instance_id)
            if delivery.is_terminal(record):
                raise FailedPreconditionError(
                    f"orchestration instance '{instance_id}' has already finished and cannot be "
                    f"{'resumed' if resume else 'suspended'}"
                )
            event = events.resumed(now, reason) if resume else events.suspended(now, reason)
            tx.add_message(hub, instance_id, event.SerializeToString(), delivery.message_time(record, now))
        self._changed(hub)

    def rewind(self, hub: str, instance_id: str, reason: str | None) -> None:
        now = self.clock.now()
        with self.backend.transaction() as tx:
            record = self._require(tx, hub, instance_id)
            if record.status != pb.ORCHESTRATION_STATUS_FAILED:
                raise FailedPreconditionError(
                    f"only failed instances can be rewound; '{instance_id}' has status "
                    f"{pb.OrchestrationStatus.Name(record.status)}"
                )
            outbox.rewind(tx, record, reason, now, parent_execution=None)
        self._changed(hub)

    def history(self, hub: str, instance_id: str) -> list[pb.HistoryEvent]:
        with self.backend.transaction() as tx:
            self._require(tx, hub, instance_id)
            return _parse(_stored_history(tx, hub, instance_id))

    def history_chunks(
        self, hub: str, instance_id: str, max_bytes: int = _HISTORY_CHUNK_BYTES
    ) -> Iterator[list[pb.HistoryEvent]]:
        """The stored history in chunks of at most 200 events and ``max_bytes`` serialized (at least one event).

        Raises:
            NotFoundError: if the instance does not exist (before anything is yielded).
        """
        with self.backend.transaction() as tx:
            self._require(tx, hub, instance_id)
            raw = _stored_history(tx, hub, instance_id)
        chunk: list[bytes] = []
        size = 0
        for event in raw:
            if chunk and (size + len(event) > max_bytes or len(chunk) >= _HISTORY_CHUNK_EVENTS):
                yield _parse(chunk)
                chunk, size = [], 0
            chunk.append(event)
            size += len(event)
        yield _parse(chunk)

    def query(self, hub: str, args: InstanceQueryArgs) -> list[InstanceRecord]:
        with self.backend.transaction() as tx:
            return tx.query_instances(hub, args)

    def instance_ids(self, hub: str, args: InstanceQueryArgs) -> list[str]:
        with self.backend.transaction() as tx:
            return tx.instance_ids(hub, args)

    def instance_keys_by_age(
        self, hub: str, args: InstanceQueryArgs, after: tuple[int, int, str] | None
    ) -> list[tuple[int, int, str]]:
        with self.backend.transaction() as tx:
            return tx.instance_keys_by_age(hub, args, after)

    def purge(self, hub: str, instance_ids: Sequence[str], recursive: bool) -> int:
        """Deletes finished instances (and, recursively, their finished sub-orchestrations)."""
        count = 0
        with self.backend.transaction() as tx:
            pending = list(instance_ids)
            while pending:  # one generation of sub-orchestrations per round
                deleted, children = tx.delete_finished(hub, pending)
                count += len(deleted)
                pending = children if recursive else []
        self._changed(hub)
        return count

    def restart(self, hub: str, instance_id: str, new_instance_id: bool) -> str:
        now = self.clock.now()
        with self.backend.transaction() as tx:
            old = self._require(tx, hub, instance_id)
            # As on DTS, a copy under a new ID may start while the original still runs; only a restart in
            # place needs the original to have finished.
            if not new_instance_id and not delivery.is_terminal(old):
                raise FailedPreconditionError(
                    f"orchestration instance '{instance_id}' has not finished; only a finished instance can be "
                    "restarted with the same ID (restartWithNewInstanceId restarts an unfinished one)"
                )
            target = self.new_id() if new_instance_id else instance_id
            # The restarted run joins the trace the original was started in.
            trace = events.started_trace(pb.HistoryEvent.FromString(raw) for raw in tx.history(hub, instance_id)[:2])
            if not new_instance_id:
                tx.delete_instance(hub, instance_id)
            opts = StartOptions(target, old.name, old.version, old.input, old.tags, trace=trace)
            delivery.insert_instance(tx, hub, opts, now, self.new_id())
        self._changed(hub)
        return target

    # Work items ------------------------------------------------------------------------------------
    def lease_orchestrations(
        self,
        hub: str,
        accept: NameFilter,
        tokens: Sequence[str],
        expires: datetime,
        affinity: Affinity | None = None,
        streaming: bool = False,
    ) -> tuple[list[OrchestrationWork], bool]:
        """Leases up to ``len(tokens)`` runnable instances in one transaction, one token each.

        Args:
            affinity: Instances held by another stream's session are skipped; one held by this stream's
                session is sent with only its new events when the stored history is what it saw.
            streaming: The stream can fetch large histories itself (``requiresHistoryStreaming``).

        Returns:
            The leased work, and whether nothing else runnable was left for this stream.
        """
        now = self.clock.now()
        found: list[OrchestrationWork] = []
        failed: list[str] = []
        with self.backend.transaction() as tx:
            complete = self._lease_ready(tx, hub, accept, tokens, expires, now, affinity, streaming, found, failed)
        for instance_id in failed:
            # Failed here instead of leased: its parent and entity locks may have work now, its waiters an answer.
            self._changed(hub, instance_id)
        if affinity is not None:
            # Only now that the leases are stored are the session marks they used spent: had the
            # transaction failed, the stream would still hold the instances it saw.
            for work in found:
                affinity.take(hub, work.instance_id)
        return found, complete

    def _lease_ready(
        self,
        tx: Transaction,
        hub: str,
        accept: NameFilter,
        tokens: Sequence[str],
        expires: datetime,
        now: datetime,
        affinity: Affinity | None,
        streaming: bool,
        found: list[OrchestrationWork],
        failed: list[str],
    ) -> bool:
        """Leases into ``found`` (and fails into ``failed`` those whose work item would be too large to send);
        returns whether nothing else runnable was left for this stream."""
        at = events.to_micros(now)
        # A small page first: in the usual case its first rows are taken. A bigger one only when the
        # small page was full of instances other streams' sessions hold.
        for page in (len(tokens) * 2, _CANDIDATES):
            candidates, complete = tx.ready_instances(hub, at, accept, page)
            for instance_id, _, _ in candidates:
                if len(found) == len(tokens):
                    return False
                if affinity is not None and affinity.held_elsewhere(hub, instance_id):
                    continue
                mark = affinity.mark(hub, instance_id) if affinity is not None else None
                token = tokens[len(found)]
                work = self._lease_instance(tx, hub, instance_id, token, expires, now, mark, streaming, failed)
                if work is not None:
                    found.append(work)
            if found or complete:
                return complete
        return False

    def _lease_instance(
        self,
        tx: Transaction,
        hub: str,
        instance_id: str,
        token: str,
        expires: datetime,
        now: datetime,
        mark: SessionMark | None,
        streaming: bool,
        failed: list[str],
    ) -> OrchestrationWork | None:
        record = tx.get_instance(hub, instance_id)
        messages = tx.visible_messages(hub, instance_id, events.to_micros(now))
        if record is None or delivery.is_terminal(record):
            tx.delete_messages([m.id for m in messages])
            return None
        length = tx.history_length(hub, instance_id)
        continued = mark is not None and mark.execution_id == record.execution_id and mark.history_length == length
        raw = _stored_history(tx, hub, instance_id) if length and not continued else []
        past_bytes = sum(map(len, raw))
        streamed = streaming and past_bytes > self.history_streaming_threshold
        inline = 0 if streamed else past_bytes
        # The new events fill what the past events leave of a work item; the rest wait for the next one.
        taken = work_size.taken_within(messages, self.max_work_item_bytes - work_size.ITEM_OVERHEAD - inline)
        message_ids, new_events = delivery.inbox(taken)
        if not (new_events and new_events[0].HasField("orchestratorStarted")):
            new_events.insert(0, events.orchestrator_started(now))
        if not length and not (len(new_events) > 1 and new_events[1].HasField("executionStarted")):
            return None
        kept = set(message_ids)
        new_bytes = sum(len(m.event) for m in taken if m.id in kept)
        if inline + new_bytes + work_size.ITEM_OVERHEAD > self.max_work_item_bytes:
            problem = f"its new events are {new_bytes} bytes" + (
                f" and its history {past_bytes} bytes, which this worker does not stream (requiresHistoryStreaming)"
                if inline
                else ""
            )
            work_size.fail_unsendable(tx, record, (message_ids, new_events), length, problem, now, self.new_id)
            failed.append(instance_id)
            return None
        request = pb.OrchestratorRequest(
            instanceId=instance_id, executionId=events.sv(record.execution_id), newEvents=new_events
        )
        if record.trace_context is not None:
            request.orchestrationTraceContext.ParseFromString(record.trace_context)
        if continued:
            request.properties[INCLUDE_PAST_EVENTS].CopyFrom(Value(bool_value=False))
            self.continued_sessions += 1
        elif streamed:
            request.requiresHistoryStreaming = True
            self.streamed_histories += 1
        elif length:
            request.pastEvents.extend(_parse(raw))
        tx.lock_instance(hub, instance_id, token, events.to_micros(expires))
        return OrchestrationWork(instance_id, message_ids, request, length, not (continued or streamed) or not length)

    def lease_activities(
        self, hub: str, accept: NameFilter, tokens: Sequence[str], expires: datetime
    ) -> tuple[list[ActivityWork], bool]:
        """Leases up to ``len(tokens)`` queued activities in one transaction, oldest first.

        Returns:
            The leased work, and whether nothing else this stream may take was queued.
        """
        at = events.to_micros(self.clock.now())
        until = events.to_micros(expires)
        with self.backend.transaction() as tx:
            # Names and versions are matched in SQL, so every record read is leased.
            records = tx.ready_activities(hub, at, accept, len(tokens))
            for token, record in zip(tokens, records, strict=False):
                tx.lock_activity(record.id, token, until)
        found = [ActivityWork(r.id, pb.ActivityRequest.FromString(r.request)) for r in records]
        return found, len(records) < len(tokens)

    def complete_orchestration(
        self,
        hub: str,
        work: OrchestrationWork,
        token: str,
        response: pb.OrchestratorResponse,
        limited: bool = True,
    ) -> SessionMark | None:
        """Applies an orchestrator's response; everything it causes commits in one transaction.

        Args:
            limited: Refuse a turn that would take the history over ``max_history_events``; ``False``
                for the turn that fails an orchestration for exactly that.

        Returns what a worker keeping the orchestration live has now seen, or ``None`` when there is
        nothing to keep (the execution ended or was replaced).
        """
        now = self.clock.now()
        with self.backend.transaction() as tx:
            record = tx.get_instance(hub, work.instance_id)
            if record is None or record.lock_token != token:
                raise stale_token(token)
            new_events = list(work.request.newEvents)
            past = list(work.request.pastEvents) if work.has_past else _past_if_needed(tx, hub, work, new_events)
            transition = advance(delivery.view(record), past, new_events, response, now, self.new_id)
            limit = self.max_history_events
            length = work.history_length + len(transition.history)
            if limited and limit is not None and length > limit:
                raise ResourceExhaustedError(
                    f"orchestration '{work.instance_id}' would exceed the history limit of {limit} events"
                )
            tx.delete_messages(work.message_ids)
            # Waiters only ever wait for a status; a turn that keeps it (most do) need not wake them.
            status_changed = record.status != transition.status or transition.continue_as_new is not None
            record.status = transition.status
            record.custom_status = transition.custom_status
            if response.HasField("orchestrationTraceContext"):
                record.trace_context = response.orchestrationTraceContext.SerializeToString()
            record.updated_at = events.to_micros(now)
            record.lock_token = record.lock_expires = None
            keep = not transition.terminal
            if transition.continue_as_new is not None:
                # The next execution continues the trace of the one it replaces.
                stored = (pb.HistoryEvent.FromString(raw) for raw in tx.history(hub, record.instance_id)[:2])
                events.inherit_trace(transition.continue_as_new.started, chain(new_events, stored))
                self._continue_as_new(tx, record, transition.continue_as_new, now)
                keep = False
            elif transition.rewound_history is not None:
                outbox.replace_history(tx, record, transition.rewound_history, now)
                record.trace_context = None  # the rewound run is traced as a new orchestration span
                keep = False
            else:
                # The lease kept everyone else from changing the history since it was read.
                history = [e.SerializeToString() for e in transition.history]
                tx.append_history(hub, record.instance_id, history, work.history_length)
            if transition.terminal:
                outbox.finish(tx, record, transition.output, transition.failure)
            tx.put_instance(record)
            outbox.apply(tx, hub, record, transition.outbox, now)
            released = transition.terminal and entity_ops.release_owner(tx, hub, record.instance_id, now)
            # Events that arrived while the instance was out for this turn make it runnable again (their
            # arrival announced nothing, as the instance was leased then).
            pending = not transition.terminal and tx.has_visible_messages(hub, record.instance_id, record.updated_at)
        kinds = _new_work_kinds(transition, pending, released)
        if kinds is None:
            self.changes.work_changed(hub)
        elif kinds:
            made = {
                "orchestration": frozenset((record.name,)),
                "activity": frozenset(task.request.name for task in transition.outbox.activities),
            }
            self.changes.work_changed(hub, kinds, made)
        if status_changed:
            self.changes.instance_changed(hub, work.instance_id, record.status)
        if transition.outbox.terminations or transition.outbox.instances:
            # The turn may have ended other instances (a terminated one that never started, a child
            # replaced by a new one): their waiters re-read them.
            self.changes.instance_changed(hub, None)
        return SessionMark(record.execution_id, length) if keep else None

    def _continue_as_new(self, tx: Transaction, record: InstanceRecord, can: ContinueAsNew, now: datetime) -> None:
        tx.clear_history(record.hub, record.instance_id)
        tx.delete_instance_activities(record.hub, record.instance_id, only_idle=True)
        delivery.queue_new_execution(tx, record, can, now)
        record.execution_id = can.execution_id
        record.trace_context = None  # a new execution, a new orchestration span
        record.version = can.version
        record.input = can.input
        record.output = None
        record.failure = None

    def complete_activity(self, hub: str, activity_id: int, token: str, response: pb.ActivityResponse) -> None:
        now = self.clock.now()
        with self.backend.transaction() as tx:
            activity = tx.get_activity(activity_id)
            if activity is None or activity.lock_token != token:
                raise stale_token(token)
            tx.delete_activity(activity_id)
            record = tx.get_instance(hub, activity.instance_id)
            request = pb.ActivityRequest.FromString(activity.request)
            same_run = record is not None and record.execution_id == request.orchestrationInstance.executionId.value
            runnable: str | None = None  # the instance's name, when the result makes it runnable now
            if record is not None and same_run and not delivery.is_terminal(record):
                result = pb.ActivityResponse()
                result.CopyFrom(response)
                result.taskId = activity.task_id
                tx.add_message(
                    hub, record.instance_id, events.task_result(now, result).SerializeToString(), events.to_micros(now)
                )
                # While the instance is out for an orchestrator turn, the result waits for that turn's
                # completion, which announces itself; a fan-in would otherwise wake streams per result.
                out = record.lock_token is not None and (record.lock_expires or 0) > events.to_micros(now)
                runnable = None if out else record.name
        if runnable is not None:
            self.changes.work_changed(hub, ("orchestration",), {"orchestration": frozenset((runnable,))})

    def release(self, hub: str, kind: str, key: str | int, token: str, keep_token: bool = False) -> None:
        """Returns a leased work item to its queue (no-op if the lease has already moved on).

        Args:
            keep_token: Only end the lease now: the item is offered again at once, but a completion
                with ``token`` still counts until another lease replaces it.
        """
        holder = token if keep_token else None
        expires = events.to_micros(self.clock.now()) if keep_token else None
        name: str | None = None  # the released work's name, when its kind's filters match on one
        with self.backend.transaction() as tx:
            if kind == "orchestration":
                record = tx.get_instance(hub, str(key))
                if record is None or record.lock_token != token:
                    return
                tx.lock_instance(hub, str(key), holder, expires)
                name = record.name
            elif kind == "entity":
                entity = tx.get_entity(hub, str(key))
                if entity is None or entity.lock_token != token:
                    return
                tx.lock_entity(hub, str(key), holder, expires)
            else:
                activity = tx.get_activity(int(key))
                if activity is None or activity.lock_token != token:
                    return
                tx.lock_activity(int(key), holder, expires)
                name = activity.name
        # Only this item became available again (its lease's expiry can only have moved earlier, to
        # now, or gone): streams whose filters leave its name to others need not look.
        self.changes.work_changed(hub, (kind,), None if name is None else {kind: frozenset((name,))})

    def next_due(self, hub: str) -> datetime | None:
        """The earliest future time at which a timer or lease expiry makes new work available."""
        at = events.to_micros(self.clock.now())
        with self.backend.transaction() as tx:
            times = [t for t in (tx.next_message_time(hub, at), tx.next_lease_expiry(hub, at)) if t is not None]
        return events.from_micros(min(times)) if times else None
