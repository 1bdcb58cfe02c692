"""The emulator's additions to the public DTS protocol, which the dtscale SDK also speaks.

Each is optional on both sides: a worker that does not send one gets the published behaviour, and a backend
that does not know one ignores it. The values are part of the wire contract between two distributions that
do not import each other, so ``tests/test_layering.py`` checks that both sides define the same ones.
"""

from __future__ import annotations

#: ``GetWorkItemsRequest.capabilities`` value of a worker that keeps orchestrations live between work items
#: (extended sessions). It lies far above the published ``WorkerCapability`` values to stay clear of new ones.
#: The emulator then sends such a worker an instance's next turn with only the new events.
EXTENDED_SESSIONS_CAPABILITY = 1001

#: ``OrchestratorRequest.properties`` key set to ``false`` when the past events are left out because the
#: worker holds the orchestration from an earlier turn of its session, and to ``true`` on a full work item
#: sent to a worker that keeps sessions: only such an item's orchestration is worth keeping, since only this
#: backend will continue it with new events alone.
INCLUDE_PAST_EVENTS = "IncludePastEvents"

#: The worker view: a unary gRPC service beside ``TaskHubSidecarService``. Its empty request returns UTF-8
#: JSON describing the connected workers of the ``taskhub`` in the call's metadata (their filters and
#: capabilities) and the runnable backlog per kind, name and version, each entry with ``takers``, the number
#: of connected workers whose filters let it through; the dashboard uses it to explain PENDING instances. A
#: backend without it answers UNIMPLEMENTED.
WORKER_VIEW_SERVICE = "dtscale.WorkerView"
WORKER_VIEW_METHOD = "GetWorkers"

#: Held entity reads. A ``GetEntity`` call whose request metadata carries ``ENTITY_WAIT_MS`` (whole milliseconds)
#: and ``ENTITY_VERSION`` (a version from an earlier answer) is answered once the entity's state has moved past
#: that version, the orchestration instance named by ``ENTITY_WAIT_INSTANCE`` (if any) has ended, or the wait
#: has elapsed (at most 30 s, and before the call's deadline). The answer names the state's version in its
#: trailing metadata under ``ENTITY_VERSION``; an answer without it came from a backend that does not hold reads.
ENTITY_WAIT_MS = "dtscale-entity-wait-ms"
ENTITY_VERSION = "dtscale-entity-version"
ENTITY_WAIT_INSTANCE = "dtscale-entity-wait-instance"
