"""A read-only view of one task hub's connected workers and pending backlog, for the web dashboard.

The public protocol cannot tell a client which workers are connected, so the emulator's command line hands this
view to the dashboard it serves. It reads the dispatcher's open streams and counts runnable work in storage; it
changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from emulator.changes import KINDS
from emulator.dispatcher import WorkDispatcher
from emulator.events import to_micros
from emulator.storage import NameFilter
from emulator.streams import StreamState

if TYPE_CHECKING:
    from emulator.server import EmulatorServer

#: Runnable work items counted per kind; past this the backlog says "at least".
BACKLOG_SCAN = 1000
_KIND_KEYS = {"orchestration": "orchestrations", "activity": "activities", "entity": "entities"}


def _filter_json(name_filter: NameFilter) -> list[dict[str, Any]] | None:
    if name_filter.versions_by_name is None:
        return None  # no filter: every name
    return [{"name": n, "versions": sorted(v)} for n, v in sorted(name_filter.versions_by_name.items())]


def _stream_json(state: StreamState) -> dict[str, Any]:
    capabilities = [
        c for c, on in (("extended sessions", state.keeps_sessions), ("history streaming", state.streams_history)) if on
    ]
    return {
        "id": state.id,
        **{_KIND_KEYS[k]: _filter_json(state.filters[k]) for k in KINDS},
        "capabilities": capabilities,
        "in_flight": sum(state.in_flight.values()),
    }


def workers(dispatcher: WorkDispatcher, hub: str) -> list[dict[str, Any]]:
    """The hub's open GetWorkItems streams with their work-item filters, oldest first."""
    return [_stream_json(s) for s in sorted(dispatcher.streams.values(), key=lambda s: s.id) if s.hub == hub]


def backlog(server: EmulatorServer, hub: str) -> list[dict[str, Any]]:
    """Runnable, unleased orchestration and activity work by name and version (up to ``BACKLOG_SCAN`` each).

    An entity's queued operations are shown with the entity (the protocol reports them per entity).
    """
    now = to_micros(server.clock.now())
    with server.backend.transaction() as tx:
        ready, _ = tx.ready_instances(hub, now, NameFilter(), BACKLOG_SCAN)
        activities = tx.ready_activities(hub, now, NameFilter(), BACKLOG_SCAN)
    counts: Counter[tuple[str, str, str | None]] = Counter()
    for _, name, version in ready:
        counts[("orchestration", name, version)] += 1
    for record in activities:
        counts[("activity", record.name, record.version)] += 1
    return [
        {"kind": k, "name": n, "version": v, "count": c}
        for (k, n, v), c in sorted(counts.items(), key=lambda i: str(i))
    ]


def worker_source(server: EmulatorServer) -> Callable[[str], Awaitable[dict[str, Any] | None]]:
    """What the dashboard calls for a hub's workers; it runs on the emulator's loop, where streams change."""

    async def read(hub: str) -> dict[str, Any] | None:
        return {"workers": workers(server.dispatcher, hub), "backlog": backlog(server, hub)}

    return read
