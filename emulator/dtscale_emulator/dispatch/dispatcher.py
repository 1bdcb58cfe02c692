"""Work-item delivery: per-stream filters and concurrency, leases with completion tokens, completions."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timedelta

from dtscale_emulator.dispatch import refusals
from dtscale_emulator.dispatch.sessions import SessionTable, advertised
from dtscale_emulator.dispatch.streams import Lease, StreamState, Work, stream_filters, work_item, work_key
from dtscale_emulator.dispatch.waiters import InstanceWaiters
from dtscale_emulator.dispatch.wake import CHANGE_LOG, FETCH_BATCH, MAX_ORPHANS, PROBE_ALL_SECONDS, weak_wake
from dtscale_emulator.engine.changes import KINDS
from dtscale_emulator.engine.entities import Entities, EntityWork
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.work import (
    BATCH,
    DUE,
    SEND,
    SEND_CHOICES,
    ActivityWork,
    Interleaver,
    OrchestrationWork,
    SessionMark,
)
from dtscale_emulator.errors import (
    EmulatorError,
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
    StreamDroppedError,
    stale_token,
)
from dtscale_emulator.limits import Limits, PayloadTooLargeError, RefusedContentError
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.tracing import WorkTracer
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord

_UNTRACED = nullcontext()


class WorkDispatcher:
    """Hands work to streams, tracks who holds what, and wakes waiters: the engine's ``ChangeSubscriber``."""

    def __init__(
        self,
        engine: Engine,
        entities: Entities,
        lease_timeout: float,
        health_ping_interval: float,
        limits: Limits | None = None,
        tracer: WorkTracer | None = None,
        interleaver: Interleaver | None = None,
    ) -> None:
        self.engine = engine
        #: Perturbs the order of concurrent work in tests (``None``: work goes as it comes, nothing to pay).
        self.interleaver = interleaver
        #: Records the emulator's spans of each work item (``None``: no tracing, nothing to pay).
        self.tracer = tracer
        self.limits = limits or Limits()
        self.entities = entities
        self.lease_timeout = lease_timeout
        self.health_ping_interval = health_ping_interval
        self._cond = threading.Condition()
        self._changes = 0
        self._kind_changes = dict.fromkeys(KINDS, 0)
        # Per kind: (change number, hub, names of the work it made or None when unknown).
        self._change_log: dict[str, deque[tuple[int, str | None, frozenset[str] | None]]] = {
            kind: deque(maxlen=CHANGE_LOG) for kind in KINDS
        }
        self._due_changes = 0  # changes that may have brought a timer or lease expiry forward
        self._closed = False
        self._active = 0
        self._leases: dict[str, Lease] = {}
        #: Open streams by ID, read by the dashboard's worker view (changed on the loop thread only).
        self.streams: dict[int, StreamState] = {}
        self._by_key: dict[tuple[str, str, str | int], str] = {}
        # Leases of vanished streams, oldest first: their completions count until the work is leased again.
        self._orphans: dict[str, Lease] = {}
        self.sessions = SessionTable()
        self.history_requests = 0  # continuations answered with requiresHistory (observability)
        self.waiters = InstanceWaiters(engine.get, lambda: self._closed)
        # Idle streams wait on this (on the server's loop); every change to what they decide on sets it.
        self._signal = aio_loop.Signal()
        # Completion tokens: unique per lease and never reused by another emulator process (a random
        # prefix), without a fresh UUID for each of the up to FETCH_BATCH tokens a fetch prepares.
        self._token_prefix = uuid.uuid4().hex[:16]
        self._token_serial = itertools.count(1)
        # Told the hub of every lease that ends (time skipping looks for idleness then).
        self._lease_listeners: tuple[Callable[[str], None], ...] = ()
        engine.clock.subscribe(weak_wake(self))

    def on_lease_end(self, listener: Callable[[str], None]) -> None:
        """Calls ``listener(hub)`` after each completion or abandon has ended its lease (must not block)."""
        self._lease_listeners = (*self._lease_listeners, listener)

    def _tokens(self, count: int) -> list[str]:
        """``count`` fresh tokens, all from one serial number (most fetches lease one or none)."""
        prefix = f"{self._token_prefix}{next(self._token_serial):012x}"
        return [f"{prefix}{i:04x}" for i in range(count)]

    def wake(self, hub: str | None = None) -> None:
        """Something changed in ``hub`` (or anywhere, with ``None``): streams look for work again.

        Without a hub, waiters on instances re-read them too (a reset, a deleted task hub).
        """
        self._wake_streams()
        if hub is None:
            self.instance_changed(None, None)

    def _wake_streams(
        self,
        kinds: tuple[str, ...] | None = None,
        hub: str | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """Wakes idle streams; ``kinds`` are those for which new work may exist (``None``: any, or timed work).

        With ``hub`` and ``names``, the change made only work of those names in that hub.
        """
        with self._cond:
            self._changes += 1
            for kind in KINDS if kinds is None else kinds:
                self._kind_changes[kind] += 1
                made = None if names is None or hub is None else names.get(kind)
                self._change_log[kind].append((self._kind_changes[kind], hub, made))
            if kinds is None:
                self._due_changes += 1
        self._signal.set()

    def work_changed(
        self,
        hub: str,
        kinds: tuple[str, ...] | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """Work of only these kinds (and names) can have appeared in ``hub`` (``None``: any, timed too)."""
        self._wake_streams(kinds, hub, names)

    def _nothing_new_for(self, state: StreamState, kind: str, since: int) -> bool:
        """Whether every change of ``kind`` after change ``since`` made only work this stream cannot take.

        That is: work in other task hubs, or of names its filters leave to other streams.
        """
        wanted = state.filters[kind].versions_by_name  # None: the stream takes every name
        with self._cond:
            log = self._change_log[kind]
            if not log or log[0][0] > since + 1:
                return False  # some of those changes are no longer remembered
            for number, hub, names in reversed(log):
                if number <= since:
                    break
                if hub is not None and hub != state.hub:
                    continue
                if names is None:
                    return False  # unknown: it may be anything
                if names and (wanted is None or not wanted.keys().isdisjoint(names)):
                    return False
        return True

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        """Wakes the waiters on one instance (or, with ``None``, on every instance of a hub or of all)."""
        self.waiters.instance_changed(hub, instance_id, status)

    def open(self) -> None:
        with self._cond:
            self._closed = False

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._signal.set()
        self.instance_changed(None, None)

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        """Counts a call that may touch storage, so shutdown can wait for it before closing the database."""
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                # Only drain() waits for this, and only after close(): waking idle streams on every
                # returning wait would send each of them to look for work that nothing announced.
                if self._closed:
                    self._cond.notify_all()

    def drain(self, timeout: float) -> bool:
        """After :meth:`close`, waits until every stream and waiter has returned; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._active:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    # Streams ---------------------------------------------------------------------------------------
    async def serve(
        self,
        hub: str,
        request: pb.GetWorkItemsRequest,
        is_active: Callable[[], bool],
        send: Callable[[pb.WorkItem], Awaitable[None]],
    ) -> None:
        """Sends work items for one GetWorkItems call until the caller goes away or the server stops.

        Runs on the server's loop; a cancelled call ends here with ``CancelledError`` and its leases go back.
        """
        limits = {
            "orchestration": request.maxConcurrentOrchestrationWorkItems,
            "activity": request.maxConcurrentActivityWorkItems,
            "entity": request.maxConcurrentEntityWorkItems,
        }
        keeps_sessions, streams_history = advertised(request)
        state = StreamState(
            hub, stream_filters(request), limits, keeps_sessions=keeps_sessions, streams_history=streams_history
        )
        state.sessions = self.sessions.view(state.id, keeps_sessions)
        with self._tracked():
            self.streams[state.id] = state
            try:
                await self._serve(state, is_active, send)
            finally:
                del self.streams[state.id]
                self._drop_stream(state)

    async def _serve(
        self, state: StreamState, is_active: Callable[[], bool], send: Callable[[pb.WorkItem], Awaitable[None]]
    ) -> None:
        last_sent = time.monotonic()
        while is_active() and not self._closed:
            seen = self._changes
            changed = self._signal.current()
            item = self._next(state)
            if item is None:
                if time.monotonic() - last_sent >= self.health_ping_interval:
                    item = pb.WorkItem(healthPing=pb.HealthPing())
                else:
                    await self._idle(state, seen, changed, last_sent)
                    continue
            last_sent = time.monotonic()
            if self.interleaver is not None and item.completionToken:
                await self._before_send(self.interleaver, item.completionToken)
            await send(item)

    async def _before_send(self, interleaver: Interleaver, token: str) -> None:
        """Lets other work run before the item goes out; then its lease may end, or its stream may drop."""
        key = self.lease_key(token)
        if key is None:
            return
        await interleaver.pause(SEND, key)
        choice = interleaver.choose(SEND, key, SEND_CHOICES)
        if choice == "expire":
            self.expire(token)
        elif choice == "drop":
            # Ends the call as a broken connection would; serve() then offers what the stream held again.
            raise StreamDroppedError(f"work-item stream dropped before sending the work item for '{key}'")

    async def _idle(self, state: StreamState, seen: int, changed: asyncio.Event, last_sent: float) -> None:
        timeout = max(0.0, self.health_ping_interval - (time.monotonic() - last_sent))
        due = self._next_due(state)
        if due is not None:
            until = self.engine.clock.seconds_until(due)
            if until is not None:
                timeout = min(timeout, until + 0.001)
        if self._changes == seen and not self._closed:
            state.idle_after = seen
            try:
                await aio_loop.wait(changed, timeout)
            finally:
                state.idle_after = None
        if self._changes == seen:
            # Woken by time, not by a change: a timer or lease may be due, so ask for every kind.
            state.empty_at.clear()
            if self.interleaver is not None:
                await self.interleaver.pause(DUE, state.hub)
        # While idle, time-based work was watched for (the wait ends when the next one is due): the
        # periodic ask-for-everything is only for streams that stay busy.
        state.probed_all_at = time.monotonic()

    def streams_caught_up(self) -> bool:
        """Whether every open stream waits for a change, having looked for work after the latest one.

        Until then a stream woken by a change may still go looking; once it holds, every stream that was to
        look has looked, so one can tell that a stream which did not look was never going to.
        """
        with self._cond:
            changes = self._changes
        return all(state.idle_after == changes for state in list(self.streams.values()))

    def _next_due(self, state: StreamState) -> datetime | None:
        changes = self._due_changes
        if (
            state.due is None
            or state.due[0] != changes
            or (state.due[1] is not None and state.due[1] <= self.engine.clock.now())
        ):
            state.due = (changes, self.engine.next_due(state.hub))
        return state.due[1]

    def _fetch(self, kind: str, state: StreamState, tokens: Sequence[str]) -> tuple[list[Work], bool]:
        """Leases work of one kind for the stream; also whether nothing more of that kind is there for it."""
        expires = self.engine.clock.now() + timedelta(seconds=self.lease_timeout)
        accept = state.filters[kind]
        if kind == "orchestration":
            orchestrations, exhausted = self.engine.lease_orchestrations(
                state.hub, accept, tokens, expires, state.sessions, state.streams_history
            )
            return list(orchestrations), exhausted
        if kind == "activity":
            activities, exhausted = self.engine.lease_activities(state.hub, accept, tokens, expires)
            return list(activities), exhausted
        # One entity batch per fetch: only an empty fetch says that none is left.
        work = self.entities.fetch(state.hub, accept, tokens[0], expires)
        return ([], True) if work is None else ([work], False)

    def _next(self, state: StreamState) -> pb.WorkItem | None:
        if state.ready:
            return state.ready.popleft()
        now = time.monotonic()
        if now - state.probed_all_at >= PROBE_ALL_SECONDS:
            state.empty_at.clear()
            state.probed_all_at = now
        for kind in state.kinds_in_turn():
            room = state.room(kind, FETCH_BATCH)
            changes = self._kind_changes[kind]
            marked = state.empty_at.get(kind)
            if not room or marked == changes:
                continue
            if marked is not None and self._nothing_new_for(state, kind, marked):
                # Specialist streams: what changed since they last found nothing is for other names.
                state.empty_at[kind] = changes
                continue
            tokens = self._tokens(room)
            found, exhausted = self._fetch(kind, state, tokens)
            if exhausted or not found:
                # Nothing more this stream may take was there as of ``changes``: asking again before that
                # kind changes would find nothing (newer work bumps the count first).
                state.empty_at[kind] = changes
            if not found:
                continue
            state.turn += 1
            tracer = self.tracer
            leased_ns = 0 if tracer is None else tracer.now()
            leased = list(zip(tokens, found, strict=False))
            if self.interleaver is not None:
                leased = self.interleaver.shuffle(BATCH, leased)
            for token, work in leased:
                lease = Lease(token, kind, state.hub, state, work, leased_ns)
                if tracer is not None:
                    tracer.dispatched(lease)
                self._track(lease)
                state.ready.append(work_item(work, token, keeps_sessions=state.keeps_sessions))
            return state.ready.popleft()
        return None

    def _track(self, lease: Lease) -> None:
        with self._cond:
            previous = self._by_key.get((lease.hub, lease.kind, lease.key))
            if previous is not None:
                # An expired lease was redelivered; the old holder's token is now stale.
                self._forget(previous)
            self._leases[lease.token] = lease
            self._by_key[(lease.hub, lease.kind, lease.key)] = lease.token
            lease.stream.in_flight[lease.kind] += 1

    def _forget(self, token: str) -> Lease | None:
        """Drops a lease (live or orphaned) from the books (caller holds the condition)."""
        lease = self._leases.pop(token, None)
        if lease is not None:
            lease.stream.in_flight[lease.kind] -= 1
        else:
            lease = self._orphans.pop(token, None)
        if lease is not None and self._by_key.get((lease.hub, lease.kind, lease.key)) == token:
            del self._by_key[(lease.hub, lease.kind, lease.key)]
        return lease

    def _orphan(self, token: str) -> Lease | None:
        """Moves a dropped stream's lease to the orphans (caller holds the condition)."""
        lease = self._leases.pop(token, None)
        if lease is None:
            return None
        lease.stream.in_flight[lease.kind] -= 1
        self._orphans[token] = lease
        if len(self._orphans) > MAX_ORPHANS:
            self._forget(next(iter(self._orphans)))
        return lease

    def _drop_stream(self, state: StreamState) -> None:
        """Offers a vanished stream's work again at once.

        Its leases only expire: a worker that lost its stream in a network blip may still complete
        what it holds, and that completion counts as long as nothing else has taken the work.
        """
        with self._cond:
            held = [t for t, lease in self._leases.items() if lease.stream is state]
            leases = [lease for t in held if (lease := self._orphan(t)) is not None]
        freed = self.sessions.drop_stream(state.id)
        # Each release announces its own item; instances the stream's sessions kept from others are
        # orchestration work again in their hubs. A stream that held nothing sends nobody looking.
        for lease in leases:
            self.engine.release(lease.hub, lease.kind, lease.key, lease.token, keep_token=True)
        for hub in freed:
            self._wake_streams(("orchestration",), hub)

    # Completions -----------------------------------------------------------------------------------
    def _take(self, hub: str, token: str, kind: str) -> Lease:
        with self._cond:
            lease = self._leases.get(token) or self._orphans.get(token)
            if lease is None or lease.kind != kind or lease.hub != hub:
                raise stale_token(token)
            return lease

    def _completing(
        self, lease: Lease, response: pb.OrchestratorResponse | pb.ActivityResponse
    ) -> AbstractContextManager[None]:
        return _UNTRACED if self.tracer is None else self.tracer.completing(lease, response)

    def complete_orchestration(self, hub: str, response: pb.OrchestratorResponse) -> None:
        lease = self._take(hub, response.completionToken, "orchestration")
        with self._completing(lease, response):
            self._complete_orchestration(hub, lease, response)

    def _complete_orchestration(self, hub: str, lease: Lease, response: pb.OrchestratorResponse) -> None:
        work = lease.work
        assert isinstance(work, OrchestrationWork)
        if response.instanceId and response.instanceId != work.instance_id:
            raise InvalidArgumentError(
                f"instanceId '{response.instanceId}' does not match the work item's instance '{work.instance_id}'"
            )
        if response.requiresHistory:
            # The worker no longer holds the orchestration: hand the work item out again, in full.
            self.history_requests += 1
            self.abandon(hub, lease.token, "orchestration")
            return
        refused: EmulatorError | None = None
        try:
            # A malformed response is refused here and keeps its lease; one the emulator cannot store (an
            # oversized payload, an entity ID over the limit) fails the turn.
            self.limits.orchestrator_response(response)
        except RefusedContentError as error:
            refused = error
        try:
            mark = self._apply_turn(hub, work, lease.token, response, refused)
            self._accepted(lease)
            if mark is not None and lease.stream.keeps_sessions:
                self.sessions.keep(lease.stream.id, hub, work.instance_id, mark)
        except EmulatorError as error:
            if not isinstance(error, FailedPreconditionError | RefusedContentError | ResourceExhaustedError):
                # The response was refused, so the work item goes back to the queue for another try.
                self.engine.release(hub, lease.kind, lease.key, lease.token)
            raise
        finally:
            self._end_lease(lease)

    def _apply_turn(
        self,
        hub: str,
        work: OrchestrationWork,
        token: str,
        response: pb.OrchestratorResponse,
        refused: EmulatorError | None,
    ) -> SessionMark | None:
        """Applies a turn; one over a size limit fails the orchestration and then raises why.

        Redelivered, the same turn would be refused the same way, forever.
        """
        if refused is None:
            try:
                return self.engine.complete_orchestration(hub, work, token, response)
            except ResourceExhaustedError as error:
                refused = error
        failed = refusals.failed_turn(work.instance_id, response, refused)
        self.engine.complete_orchestration(hub, work, token, failed, limited=False)
        raise refused

    def complete_activity(self, hub: str, response: pb.ActivityResponse) -> None:
        lease = self._take(hub, response.completionToken, "activity")
        with self._completing(lease, response):
            self._complete_activity(hub, lease, response)

    def _complete_activity(self, hub: str, lease: Lease, response: pb.ActivityResponse) -> None:
        work = lease.work
        assert isinstance(work, ActivityWork)
        try:
            try:
                self.limits.payload("result", response.result.value if response.HasField("result") else None)
            except PayloadTooLargeError as error:
                # Redelivered, the activity would return the same result: it fails instead.
                failed = refusals.failed_activity(work.request, response, error)
                self.engine.complete_activity(hub, work.activity_id, lease.token, failed)
                raise
            self.engine.complete_activity(hub, work.activity_id, lease.token, response)
            self._accepted(lease)
        finally:
            self._end_lease(lease)

    def complete_entity(self, hub: str, result: pb.EntityBatchResult) -> None:
        lease = self._take(hub, result.completionToken, "entity")
        work = lease.work
        assert isinstance(work, EntityWork)
        try:
            try:
                self.limits.payload("entityState", result.entityState.value if result.HasField("entityState") else None)
                self.limits.entity_batch_result(result)
            except RefusedContentError as error:
                # Redelivered, the batch would end in the same state: its operations fail instead.
                self.entities.complete(hub, work, lease.token, refusals.failed_batch(work.request, result, error))
                raise
            self.entities.complete(hub, work, lease.token, result)
            self._accepted(lease)
        finally:
            self._end_lease(lease)

    def _accepted(self, lease: Lease) -> None:
        if self.interleaver is not None:
            self.interleaver.committed(lease.kind, lease.token)

    def lease_key(self, token: str) -> str | None:
        """The interleaving key of the work a token leases (``None``: no such lease)."""
        with self._cond:
            lease = self._leases.get(token) or self._orphans.get(token)
        return None if lease is None else work_key(lease.work)

    def expire(self, token: str) -> None:
        """Ends a lease in storage as its timeout would: the work is offered again at once, and the holder's
        completion still counts until another lease replaces it."""
        with self._cond:
            lease = self._leases.get(token) or self._orphans.get(token)
        if lease is not None:
            self.engine.release(lease.hub, lease.kind, lease.key, token, keep_token=True)

    def _end_lease(self, lease: Lease) -> None:
        """Drops a completed lease; wakes streams only if its stream had no room left for that kind.

        Otherwise the freed slot changes nothing a stream decides on, and whatever the completion made
        runnable has already announced itself.
        """
        with self._cond:
            full = not lease.stream.has_room(lease.kind)
            woke = self._forget(lease.token) is not None and full
            if woke:
                self._changes += 1
        if woke:
            self._signal.set()
        for listener in self._lease_listeners:
            listener(lease.hub)

    def abandon(self, hub: str, token: str, kind: str) -> None:
        lease = self._take(hub, token, kind)
        # A stream that was full is woken for its freed slot even when the release finds that the lease had
        # moved on in storage (the instance was replaced meanwhile) and so announces nothing.
        self._end_lease(lease)
        self.engine.release(hub, kind, lease.key, token)

    def forget_all(self) -> None:
        """Drops every lease and session mark (after the store was emptied: none of them names anything)."""
        self.sessions.drop_all()
        with self._cond:
            for token in [*self._leases, *self._orphans]:
                self._forget(token)
        self._wake_streams()

    def forget_hub(self, hub: str) -> None:
        self.sessions.drop_hub(hub)
        with self._cond:
            held = [*self._leases.items(), *self._orphans.items()]
            for token in [t for t, lease in held if lease.hub == hub]:
                self._forget(token)

    # Waiters ---------------------------------------------------------------------------------------
    async def wait_for(
        self,
        hub: str,
        instance_id: str,
        done: Callable[[int], bool],
        timeout: float | None,
        is_active: Callable[[], bool],
    ) -> InstanceRecord | None:
        """Waits until ``done(status)`` holds for the instance's status; returns None if it does not exist.

        Raises:
            TimeoutError: if ``timeout`` seconds pass first.
        """
        with self._tracked():
            return await self.waiters.wait(hub, instance_id, done, timeout, is_active)
