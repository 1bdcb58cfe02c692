"""One GetWorkItems stream as the dispatcher sees it: its filters and limits, and the leases it holds."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime

from dtscale_emulator.dispatch.sessions import StreamSessions
from dtscale_emulator.engine.changes import KINDS
from dtscale_emulator.engine.entities import EntityWork
from dtscale_emulator.engine.work import ActivityWork, OrchestrationWork
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.protocol import pb
from dtscale_emulator.protocol.extensions import INCLUDE_PAST_EVENTS
from dtscale_emulator.storage import NameFilter

_stream_ids = itertools.count(1)
Work = OrchestrationWork | ActivityWork | EntityWork


@dataclass
class StreamState:
    """One connected GetWorkItems stream: what it accepts, how much it may hold, and what it holds."""

    hub: str
    filters: dict[str, NameFilter]
    limits: dict[str, int]
    id: int = field(default_factory=lambda: next(_stream_ids))
    in_flight: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    turn: int = 0
    # Leased in one batch and not yet sent; their leases are tracked, so a dropped stream frees them. Each with
    # the newest commit it rests on (it goes out once that commit is on disk).
    ready: deque[tuple[pb.WorkItem, int]] = field(default_factory=deque)
    # Kinds in which work for this stream may have appeared since it last found none of that kind (every
    # kind at first). Changed under the wake-up index's lock: a change adds, a look takes out before it fetches.
    stale: set[str] = field(default_factory=lambda: set(KINDS))
    # A change has woken the stream and it has not looked since (under the same lock).
    wake_pending: bool = False
    # Set (on the server's loop) to end the stream's wait for a change.
    wakeup: aio_loop.Flag = field(default_factory=aio_loop.Flag)
    waiting: bool = False  # waiting for a change or a due time, having looked
    idle_since: float = 0.0  # when it last began to wait (streams woken together look oldest first)
    # Kinds it was woken for on behalf of idle streams alike, with the names of the change's work (under the
    # wake-up index's lock; see wakeups.py).
    batons: dict[str, frozenset[str] | None] = field(default_factory=dict)
    stalled: bool = False  # a send did not finish in time: the stream is being ended
    probed_all_at: float = 0.0
    due: tuple[int, datetime | None] | None = None  # (change count, next due time) of the last check
    keeps_sessions: bool = False  # the worker keeps orchestrations live between work items
    streams_history: bool = False  # the worker fetches large histories with StreamInstanceHistory
    sessions: StreamSessions | None = None

    def kinds_in_turn(self) -> list[str]:
        """Work kinds, starting with a different one each time so no kind starves the others."""
        start = self.turn % len(KINDS)
        return [*KINDS[start:], *KINDS[:start]]

    def has_room(self, kind: str) -> bool:
        limit = self.limits[kind]
        return limit <= 0 or self.in_flight[kind] < limit

    def room(self, kind: str, most: int) -> int:
        limit = self.limits[kind]
        return most if limit <= 0 else max(0, min(most, limit - self.in_flight[kind]))


def vanished_stream(hub: str) -> StreamState:
    """Stands for the streams of a process that is gone: the holder of the leases it left in the store.

    It is never served and has no limits, so a lease of it that ends frees no slot anyone waits for.
    """
    return StreamState(hub, dict.fromkeys(KINDS, NameFilter()), dict.fromkeys(KINDS, 0))


@dataclass
class Lease:
    token: str
    kind: str
    hub: str
    stream: StreamState
    work: Work
    leased_ns: int = 0  # when it was leased (nanoseconds since the epoch), kept only while tracing

    @property
    def key(self) -> str | int:
        if isinstance(self.work, OrchestrationWork):
            return self.work.instance_id
        if isinstance(self.work, EntityWork):
            return self.work.entity_id
        return self.work.activity_id


def work_kind(work: Work) -> str:
    """The kind of work item (``orchestration``, ``activity`` or ``entity``)."""
    if isinstance(work, OrchestrationWork):
        return "orchestration"
    return "entity" if isinstance(work, EntityWork) else "activity"


def work_key(work: Work) -> str:
    """What an interleaver knows the work by: stable across runs, unlike tokens and activity row IDs."""
    if isinstance(work, OrchestrationWork):
        return work.instance_id
    if isinstance(work, EntityWork):
        return work.entity_id
    return f"{work.request.orchestrationInstance.instanceId}/{work.request.taskId}"


def work_item(work: Work, token: str, *, keeps_sessions: bool = False) -> pb.WorkItem:
    """The message a stream sends; a full orchestration turn to a session-keeping worker says it may be kept."""
    if isinstance(work, OrchestrationWork):
        item = pb.WorkItem(orchestratorRequest=work.request, completionToken=token)
        properties = item.orchestratorRequest.properties
        if keeps_sessions and INCLUDE_PAST_EVENTS not in properties:
            properties[INCLUDE_PAST_EVENTS].bool_value = True
        return item
    if isinstance(work, EntityWork):
        return pb.WorkItem(entityRequestV2=work.request, completionToken=token)
    return pb.WorkItem(activityRequest=work.request, completionToken=token)


def stream_filters(request: pb.GetWorkItemsRequest) -> dict[str, NameFilter]:
    """Per-kind filters of a GetWorkItems request (no filters = accept everything).

    Entity names compare case-insensitively, as entity IDs carry the name in lower case.
    """
    if not request.HasField("workItemFilters"):
        return dict.fromkeys(KINDS, NameFilter())
    wanted = request.workItemFilters
    found: dict[str, NameFilter] = {}
    for kind, entries in (("orchestration", wanted.orchestrations), ("activity", wanted.activities)):
        by_name: dict[str, frozenset[str]] = {}
        for entry in entries:
            by_name[entry.name] = by_name.get(entry.name, frozenset()) | frozenset(entry.versions)
        found[kind] = NameFilter(by_name)
    found["entity"] = NameFilter({entry.name.lower(): frozenset() for entry in wanted.entities})
    return found
