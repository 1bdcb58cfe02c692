"""A read-only view of one task hub's connected workers and pending backlog, served as a protocol extension.

The public protocol cannot tell a client which workers are connected, so the emulator serves this view as its
own small gRPC service (``dtscale.WorkerView``, described in ``durabletask._protocol_extensions``); the web
dashboard asks for it through its client, wherever it runs. It reads the dispatcher's open streams and counts
runnable work in storage, with how many of those streams would take each entry; it changes nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from dtscale_emulator.dispatch.dispatcher import WorkDispatcher
from dtscale_emulator.dispatch.streams import StreamState
from dtscale_emulator.engine import entity_ops
from dtscale_emulator.engine.changes import KINDS
from dtscale_emulator.engine.events import to_micros
from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.ops.clock import Clock
from dtscale_emulator.protocol.extensions import WORKER_VIEW_METHOD, WORKER_VIEW_SERVICE
from dtscale_emulator.rpc.hubs import TaskHubs
from dtscale_emulator.rpc.servicer import Context, _mapped
from dtscale_emulator.storage import Backend, NameFilter

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


def backlog(backend: Backend, clock: Clock, hub: str, streams: Sequence[StreamState] = ()) -> list[dict[str, Any]]:
    """Runnable, unleased work by kind, name and version (up to ``BACKLOG_SCAN`` items of each kind).

    Entities count once each, by entity name, while operations wait for them. ``takers`` counts the ``streams``
    whose work-item filters let the entry through: 0 while a stream is connected means that no connected
    worker will ever be sent it (DTS keeps such work queued and says nothing).
    """
    now = to_micros(clock.now())
    with backend.transaction() as tx:
        ready, _ = tx.ready_instances(hub, now, NameFilter(), BACKLOG_SCAN)
        activities = tx.ready_activities(hub, now, NameFilter(), BACKLOG_SCAN)
        entities = tx.ready_entities(hub, now, BACKLOG_SCAN)
    counts: Counter[tuple[str, str, str | None]] = Counter()
    for _, name, version in ready:
        counts[("orchestration", name, version)] += 1
    for record in activities:
        # An activity scheduled without a version is matched by its orchestration's (stored with it).
        counts[("activity", record.name, record.version)] += 1
    for entity in entities:
        counts[("entity", entity_ops.entity_name(entity.instance_id) or "", None)] += 1
    return [
        {"kind": k, "name": n, "version": v, "count": c, "takers": sum(s.filters[k].accepts(n, v) for s in streams)}
        for (k, n, v), c in sorted(counts.items(), key=lambda i: str(i))
    ]


@dataclass(frozen=True)
class WorkerView:
    """The worker-view protocol extension (see ``durabletask._protocol_extensions``) for one server."""

    hubs: TaskHubs
    dispatcher: WorkDispatcher
    backend: Backend
    clock: Clock

    @_mapped
    async def GetWorkers(self, request: bytes, context: Context) -> bytes:
        hub = self.hubs.resolve(context.invocation_metadata() or ())
        if request:
            raise InvalidArgumentError(f"{WORKER_VIEW_SERVICE}/{WORKER_VIEW_METHOD} takes an empty request")
        streams = [s for s in self.dispatcher.streams.values() if s.hub == hub]
        found = {"workers": workers(self.dispatcher, hub), "backlog": backlog(self.backend, self.clock, hub, streams)}
        return json.dumps(found).encode()


def handler(view: WorkerView) -> grpc.GenericRpcHandler[Any, Any]:
    """The extension's gRPC service, served next to the public one (requests and responses stay bytes)."""
    method = grpc.unary_unary_rpc_method_handler(view.GetWorkers)
    return grpc.method_handlers_generic_handler(WORKER_VIEW_SERVICE, {WORKER_VIEW_METHOD: method})
