"""Work-item delivery: per-stream filters and concurrency, leases with completion tokens, completions."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from dtscale_emulator.dispatch.completions import Completions
from dtscale_emulator.dispatch.entity_waits import EntityWaits
from dtscale_emulator.dispatch.leases import LeaseBook
from dtscale_emulator.dispatch.sessions import SessionTable, advertised
from dtscale_emulator.dispatch.streams import (
    Lease,
    StreamState,
    Work,
    stream_filters,
    vanished_stream,
    work_item,
    work_key,
    work_kind,
)
from dtscale_emulator.dispatch.waiters import InstanceWaiters
from dtscale_emulator.dispatch.wake import (
    DEFAULT_WORK_ITEM_LIMIT,
    FETCH_BATCH,
    PROBE_ALL_SECONDS,
    STALL_SECONDS,
    weak_wake,
)
from dtscale_emulator.dispatch.wakeups import StreamWakeups
from dtscale_emulator.engine.changes import KINDS
from dtscale_emulator.engine.entities import Entities, EntityWork
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.work import BATCH, DUE, SEND, SEND_CHOICES, ActivityWork, Interleaver
from dtscale_emulator.errors import StreamDroppedError
from dtscale_emulator.limits import Limits
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.tracing import WorkTracer
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import ActivityRecord, EntityRecord, InstanceRecord

log = logging.getLogger("dtscale_emulator")
#: How often a graceful stop looks whether the work it waits for has come back.
DRAIN_POLL_SECONDS = 0.02


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
        #: Seconds a send to a stream may take before the stream is ended and its work goes back to the
        #: queue (its worker does not read, so gRPC flow control holds the send).
        self.stall_timeout = STALL_SECONDS
        self._cond = threading.Condition()
        self._due_changes = 0  # changes that may have brought a timer or lease expiry forward
        self._closed = False
        # A graceful stop: streams stay open but lease nothing more, and stream ends leave leases in the store.
        self._draining = False
        self._keep_leases = False
        self._active = 0
        self.leases = LeaseBook()
        #: Open streams by ID, read by the dashboard's worker view (changed on the loop thread only).
        self.streams: dict[int, StreamState] = {}
        #: Which streams each change wakes; ``wakeups.count`` counts the wake-ups handed out.
        self.wakeups = StreamWakeups()
        self.sessions = SessionTable()
        self.waiters = InstanceWaiters(engine.get, lambda: self._closed)
        #: Held entity reads (GetEntity with the held-read metadata), woken by entity commits and instance ends.
        self.entity_waits = EntityWaits(lambda: self._closed)
        entities.on_state_change(self.entity_waits.entity_changed)
        # Told the hub of every lease that ends (time skipping looks for idleness then).
        self._lease_listeners: tuple[Callable[[str], None], ...] = ()
        self.completions = Completions(
            engine, entities, self.limits, self.leases, self.sessions, self._end_lease, tracer, interleaver
        )
        engine.clock.subscribe(weak_wake(self))

    def on_lease_end(self, listener: Callable[[str], None]) -> None:
        """Calls ``listener(hub)`` after each completion or abandon has ended its lease (must not block)."""
        self._lease_listeners = (*self._lease_listeners, listener)

    def wake(self, hub: str | None = None) -> None:
        """Something changed in ``hub`` (or anywhere, with ``None``): streams look for work again.

        Without a hub, waiters on instances re-read them too (a reset, a deleted task hub).
        """
        self._wake_streams(None, hub)
        if hub is None:
            self.instance_changed(None, None)

    def _wake_streams(
        self,
        kinds: tuple[str, ...] | None = None,
        hub: str | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """Wakes the streams that can take work of ``kinds`` (``None``: any, or timed work) in ``hub``.

        With ``names``, the change made only work of those names: streams whose filters leave every one of
        them to other streams sleep on.
        """
        if kinds is None:
            with self._cond:
                self._due_changes += 1
        self.wakeups.changed(hub, kinds, names)

    def work_changed(
        self,
        hub: str,
        kinds: tuple[str, ...] | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """Work of only these kinds (and names) can have appeared in ``hub`` (``None``: any, timed too)."""
        self._wake_streams(kinds, hub, names)

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        """Wakes the waiters on one instance (or, with ``None``, on every instance of a hub or of all)."""
        self.waiters.instance_changed(hub, instance_id, status)
        self.entity_waits.instance_changed(hub, instance_id, status)

    def open(self) -> None:
        with self._cond:
            self._closed = False
            self._draining = False
            self._keep_leases = False

    def close(self, *, keep_leases: bool = False) -> None:
        """Ends every stream and waiter. With ``keep_leases``, what the streams hold stays leased in the store.

        Kept leases end as a crash leaves them: a restarted process keeps them for its restart grace, so a result
        still on its way lands instead of the work being run again (see :meth:`drain_leases`).
        """
        with self._cond:
            self._closed = True
            self._keep_leases = keep_leases
            self._cond.notify_all()
        self._wake_streams()
        self.instance_changed(None, None)

    def drain_leases(self, timeout: float) -> int:
        """The first half of a graceful stop: lease nothing more and wait for the work already out to come back.

        Streams stay open (their workers see no disconnection and keep sending results), work leased but not yet
        sent goes back at once, and this returns once every lease given to a connected stream has been completed
        or handed back, or after ``timeout`` seconds; how many are still out.
        """
        with self._cond:
            self._draining = True
        self._wake_streams()  # each stream hands back what it has not sent yet
        held = self.leases.live_tokens()  # under the book's lock: completions change it meanwhile
        deadline = time.monotonic() + timeout
        while (left := self.leases.count_held(held)) and time.monotonic() < deadline:
            time.sleep(DRAIN_POLL_SECONDS)  # a shutdown path: completions end leases on other threads
        return left

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
        given = {
            "orchestration": request.maxConcurrentOrchestrationWorkItems,
            "activity": request.maxConcurrentActivityWorkItems,
            "entity": request.maxConcurrentEntityWorkItems,
        }
        # A worker that names no limit still gets one: otherwise a stream that never reads holds whatever
        # fits in its transport's buffers (megabytes: thousands of small work items) until the leases expire.
        limits = {kind: limit if limit > 0 else DEFAULT_WORK_ITEM_LIMIT for kind, limit in given.items()}
        keeps_sessions, streams_history = advertised(request)
        state = StreamState(
            hub, stream_filters(request), limits, keeps_sessions=keeps_sessions, streams_history=streams_history
        )
        state.sessions = self.sessions.view(state.id, keeps_sessions)
        with self._tracked():
            self.streams[state.id] = state
            self.wakeups.add(state)
            try:
                await self._serve(state, is_active, send)
            finally:
                self.wakeups.remove(state)
                del self.streams[state.id]
                self._drop_stream(state)

    async def _serve(
        self, state: StreamState, is_active: Callable[[], bool], send: Callable[[pb.WorkItem], Awaitable[None]]
    ) -> None:
        last_sent = time.monotonic()
        while is_active() and not self._closed:
            self.wakeups.looking(state)
            found = self._next(state)
            if found is None:
                if time.monotonic() - last_sent >= self.health_ping_interval:
                    found = pb.WorkItem(healthPing=pb.HealthPing()), 0
                else:
                    await self._idle(state, last_sent)
                    continue
            item, rests_on = found
            if rests_on:
                # Out only once what it carries (and, for an activity or entity, its lease) is on disk.
                await self.engine.backend.durable(0, rests_on)
            last_sent = time.monotonic()
            if self.interleaver is not None and item.completionToken:
                await self._before_send(self.interleaver, item.completionToken)
            if self._draining and item.completionToken:
                # Leased while a graceful stop began (its snapshot of the leases out may have missed it): it goes
                # back instead, so that no result is on its way once the drain sees every lease it waits for end.
                self._hand_back(item.completionToken)
                continue
            await self._send(state, send, item)

    async def _send(
        self, state: StreamState, send: Callable[[pb.WorkItem], Awaitable[None]], item: pb.WorkItem
    ) -> None:
        """Sends one item; a send that gRPC flow control holds past ``stall_timeout`` cancels the call.

        While the send waits the stream leases nothing more; ending it hands what it holds to other streams
        (see :meth:`_drop_stream`). The call ends as CANCELLED: a status could not get past the unread data.
        """
        task = asyncio.current_task()
        assert task is not None
        timer = asyncio.get_running_loop().call_later(self.stall_timeout, _stall, state, task)
        try:
            await send(item)
        finally:
            timer.cancel()

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

    async def _idle(self, state: StreamState, last_sent: float) -> None:
        timeout = max(0.0, self.health_ping_interval - (time.monotonic() - last_sent))
        due = self._next_due(state)
        if due is not None:
            until = self.engine.clock.seconds_until(due)
            if until is not None:
                timeout = min(timeout, until + 0.001)
        state.waiting = True
        state.idle_since = time.monotonic()
        try:
            woken = await aio_loop.wait(state.wakeup, timeout)
        finally:
            state.waiting = False
        if not woken:
            # Woken by time, not by a change: a timer or lease may be due, so ask for every kind.
            self.wakeups.mark_stale(state, KINDS)
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
        return all(state.waiting and not state.wake_pending for state in list(self.streams.values()))

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

    def _take(self, state: StreamState, kind: str) -> tuple[list[str], list[Work]]:
        """Leases what the stream may take of ``kind`` if that kind is stale for it: the tokens and the work."""
        room = state.room(kind, FETCH_BATCH)
        if not room:
            self.wakeups.hand_on_unused(state, kind)
            return [], []
        # Taken out of the stale kinds before the fetch: a change that the fetch misses marks it again.
        fetch, baton = self.wakeups.take_stale(state, kind)
        if not fetch:
            return [], []
        tokens = self.leases.tokens(room)
        found, exhausted = self._fetch(kind, state, tokens)
        if found and not exhausted:
            self.wakeups.mark_stale(state, (kind,))  # there may be more than the stream had room for
            if baton is not None:
                self.wakeups.hand_on(state, kind, baton.names)  # and another stream alike may take it
        return tokens, found

    def _next(self, state: StreamState) -> tuple[pb.WorkItem, int] | None:
        """The next work item for the stream, with the newest commit it rests on."""
        if self._draining:
            self._hand_back_unsent(state)
            return None
        if state.ready:
            return state.ready.popleft()
        now = time.monotonic()
        if now - state.probed_all_at >= PROBE_ALL_SECONDS:
            self.wakeups.mark_stale(state, KINDS)
            state.probed_all_at = now
        backend = self.engine.backend
        for kind in state.kinds_in_turn():
            read = backend.last_commit
            tokens, found = self._take(state, kind)
            if not found:
                continue
            # An orchestration's item rests on the history and events it carries, all committed before its lease:
            # its lease need not reach the disk first, as a restart ends every orchestration lease anyway
            # (Backend.release_all_leases). An activity's or entity's lease is kept over a restart, so it must.
            # Only when the lease was the one commit made meanwhile is it known to be the newest the item read;
            # a commit from another thread (a large turn's) may have come before it, and is waited for.
            leased_alone = backend.last_commit <= read + 1
            rests_on = read if kind == "orchestration" and leased_alone else backend.last_commit
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
                freed = self.leases.track(lease)
                if freed is not None and freed is not state:
                    self.wakeups.wake(freed)  # its expired lease went to this stream: it has room again
                state.ready.append((work_item(work, token, keeps_sessions=state.keeps_sessions), rests_on))
            return state.ready.popleft()
        return None

    def _hand_back_unsent(self, state: StreamState) -> None:
        """Ends the leases of work a draining stream took but never sent: no worker has it, nothing to wait for."""
        while state.ready:
            self._hand_back(state.ready.popleft()[0].completionToken)

    def _hand_back(self, token: str) -> None:
        """Ends the lease of a work item no worker was sent (if it still has one): it is offered again."""
        lease = self.leases.find(token)
        if lease is not None:
            self.completions.abandon(lease.hub, token, lease.kind)

    def _drop_stream(self, state: StreamState) -> None:
        """Offers a vanished stream's work again at once.

        Its leases only expire: a worker that lost its stream in a network blip may still complete
        what it holds, and that completion counts as long as nothing else has taken the work. When the
        server stops keeping leases (:meth:`close`), the store keeps them as a crash would.
        """
        leases = self.leases.orphan_all(state)
        if self._keep_leases:
            self.sessions.drop_stream(state.id)
            return
        if state.stalled:
            log.warning(
                "work-item stream %d of task hub '%s' did not take a work item within %g s (its worker does not "
                "read): closed it; %d work items it held go back to the queue",
                state.id,
                state.hub,
                self.stall_timeout,
                len(leases),
            )
        freed = self.sessions.drop_stream(state.id)
        # Each release announces its own item; instances the stream's sessions kept from others are
        # orchestration work again in their hubs. A stream that held nothing sends nobody looking.
        for lease in leases:
            self.engine.release(lease.hub, lease.kind, lease.key, lease.token, keep_token=True)
        for hub in freed:
            self._wake_streams(("orchestration",), hub)

    # Completions -----------------------------------------------------------------------------------
    def complete_orchestration(self, hub: str, response: pb.OrchestratorResponse) -> None:
        self.completions.orchestration(hub, response)

    def complete_activity(self, hub: str, response: pb.ActivityResponse) -> None:
        self.completions.activity(hub, response)

    def complete_entity(self, hub: str, result: pb.EntityBatchResult) -> None:
        self.completions.entity(hub, result)

    def abandon(self, hub: str, token: str, kind: str) -> None:
        self.completions.abandon(hub, token, kind)

    @property
    def history_requests(self) -> int:
        """Continuations answered with requiresHistory (observability)."""
        return self.completions.history_requests

    @property
    def _leases(self) -> dict[str, Lease]:
        return self.leases.live

    def lease_key(self, token: str) -> str | None:
        """The interleaving key of the work a token leases (``None``: no such lease)."""
        lease = self.leases.find(token)
        return None if lease is None else work_key(lease.work)

    def expire(self, token: str) -> None:
        """Ends a lease in storage as its timeout would: the work is offered again at once, and the holder's
        completion still counts until another lease replaces it."""
        lease = self.leases.find(token)
        if lease is not None:
            self.engine.release(lease.hub, lease.kind, lease.key, token, keep_token=True)

    def _end_lease(self, lease: Lease) -> None:
        """Drops a completed lease; wakes its stream if it had no room left for that kind.

        The freed slot changes nothing any other stream decides on, and whatever the completion made
        runnable has already announced itself.
        """
        if self.leases.end(lease):
            self.wakeups.wake(lease.stream)
        for listener in self._lease_listeners:
            listener(lease.hub)

    def carry_over(self, records: Sequence[ActivityRecord | EntityRecord]) -> None:
        """Takes on the activity and entity leases a previous process left in the store.

        (``Backend.release_all_leases`` kept them.) A worker that ran such a work item may deliver its result once
        it reaches this process: the result counts as long as nobody has leased the item again, which the store
        allows only once the lease it kept expires. An entity batch's operations are not known here: its result
        names them (see :meth:`Completions.entity`).
        """
        vanished: dict[str, StreamState] = {}
        leased_ns = 0 if self.tracer is None else self.tracer.now()
        leases = []
        for record in records:
            if record.lock_token is None:
                continue
            stream = vanished.get(record.hub) or vanished.setdefault(record.hub, vanished_stream(record.hub))
            if isinstance(record, ActivityRecord):
                work: Work = ActivityWork(record.id, pb.ActivityRequest.FromString(record.request))
            else:
                work = EntityWork(record.instance_id, [], [], pb.EntityRequest(instanceId=record.instance_id))
            leases.append(Lease(record.lock_token, work_kind(work), record.hub, stream, work, leased_ns))
        self.leases.adopt(leases)

    def forget_all(self) -> None:
        """Drops every lease and session mark (after the store was emptied: none of them names anything)."""
        self.sessions.drop_all()
        self.leases.forget_all()
        self._wake_streams()

    def forget_hub(self, hub: str) -> None:
        self.sessions.drop_hub(hub)
        self.leases.forget_hub(hub)

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


def _stall(state: StreamState, task: asyncio.Task[Any]) -> None:
    """Ends a stream whose send has not finished in time (the caller's reader does not read)."""
    state.stalled = True
    task.cancel()
