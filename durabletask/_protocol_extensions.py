"""Our private extensions to the public DTS protocol: values Microsoft's published protocol does not define.

Each one is optional on both sides. A backend that does not know an extension ignores it (proto3 enums are
open, so an unknown capability reaches it as a plain number), and a worker that does not send it gets the
published behaviour. Both SDK and emulator import these values from here, so each is defined once.
"""

from __future__ import annotations

#: Extended sessions. A worker that keeps orchestrations live between work items adds this to
#: ``GetWorkItemsRequest.capabilities``. It is not a value of the published ``WorkerCapability`` enum (which
#: stops at a handful of small numbers), so it is far from them to stay clear of future values. A backend that
#: knows it sends an instance's next work item to the same stream with only the new events; one that does not
#: ignores it and keeps sending full histories, which the worker handles as it always does.
EXTENDED_SESSIONS_CAPABILITY = 1001

#: The ``OrchestratorRequest.properties`` key a backend sets to ``false`` when it leaves out the past events
#: because the worker holds the orchestration from an earlier work item (of an extended session). The worker
#: answers ``requiresHistory`` when it no longer holds it. A backend that sends such continuations sets it to
#: ``true`` on full work items; the worker keeps an orchestration only from those, since a backend that never
#: continues (one that does not know the extension) would leave every kept orchestration unused.
INCLUDE_PAST_EVENTS = "IncludePastEvents"

#: The worker view: a gRPC service of its own, next to ``TaskHubSidecarService``, that tells a client which
#: workers are connected to the task hub named by the call's ``taskhub`` metadata, with their work-item filters,
#: and how much runnable work waits per name and version. The published protocol has no such call; the web
#: dashboard uses it to show workers and to say why an instance stays PENDING. One unary method: the request is
#: empty, the response is UTF-8 JSON::
#:
#:     {"workers": [{"id": 1, "orchestrations": [{"name": "n", "versions": ["1.0"]}] | null,
#:                   "activities": ..., "entities": ..., "capabilities": ["extended sessions"], "in_flight": 0}],
#:      "backlog": [{"kind": "orchestration" | "activity" | "entity", "name": "n", "version": "1.0" | null,
#:                   "count": 3, "takers": 1}]}
#:
#: where ``null`` for a kind means the worker sent no filter (it takes every name) and an empty ``versions``
#: list takes every version; ``takers`` counts the connected workers whose filters let that backlog entry through
#: (0: nobody connected can take it). It passes the same authentication as the other calls. A backend without it
#: answers UNIMPLEMENTED, which a client reads as "this backend cannot tell".
WORKER_VIEW_SERVICE = "dtscale.WorkerView"
WORKER_VIEW_METHOD = "GetWorkers"

#: Held entity reads, which stream subscribers use to wait for new items without polling. A ``GetEntity`` call
#: may carry the request metadata ``ENTITY_WAIT_MS`` (whole milliseconds) with ``ENTITY_VERSION`` (the version an
#: earlier answer named) and optionally ``ENTITY_WAIT_INSTANCE`` (an orchestration instance ID). A backend that
#: knows them answers once the entity's state has moved past that version, the named instance has ended, or the
#: wait has elapsed (it may answer earlier, e.g. before the call's deadline), and names the state's current
#: version in the answer's trailing metadata under ``ENTITY_VERSION``. A backend that does not know them (managed
#: DTS) answers at once without that key, which tells the caller to poll instead.
ENTITY_WAIT_MS = "dtscale-entity-wait-ms"
ENTITY_VERSION = "dtscale-entity-version"
ENTITY_WAIT_INSTANCE = "dtscale-entity-wait-instance"
