"""Query, list and purge requests: paging and filters translated to storage queries."""

from __future__ import annotations

from durabletask._proto import orchestrator_service_pb2 as pb
from emulator import events
from emulator.convert import entity_metadata, orchestration_state
from emulator.engine import Engine
from emulator.entities import Entities
from emulator.storage import EntityQueryArgs, InstanceQueryArgs

DEFAULT_PAGE = 100
_PURGE_PAGE = 500


def _micros(message: object, name: str) -> int | None:
    if not message.HasField(name):  # type: ignore[attr-defined]
        return None
    return events.to_micros(events.to_datetime(getattr(message, name)))


def query_instances(engine: Engine, hub: str, query: pb.InstanceQuery) -> pb.QueryInstancesResponse:
    limit = query.maxInstanceCount if query.maxInstanceCount > 0 else DEFAULT_PAGE
    args = InstanceQueryArgs(
        statuses=list(query.runtimeStatus),
        created_from=_micros(query, "createdTimeFrom"),
        created_to=_micros(query, "createdTimeTo"),
        id_prefix=query.instanceIdPrefix.value if query.HasField("instanceIdPrefix") else None,
        after_id=query.continuationToken.value if query.HasField("continuationToken") else None,
        limit=limit,
    )
    records = engine.query(hub, args)
    response = pb.QueryInstancesResponse(
        orchestrationState=[orchestration_state(r, query.fetchInputsAndOutputs) for r in records]
    )
    if len(records) == limit:
        response.continuationToken.value = records[-1].instance_id
    return response


def list_instance_ids(engine: Engine, hub: str, request: pb.ListInstanceIdsRequest) -> pb.ListInstanceIdsResponse:
    limit = request.pageSize if request.pageSize > 0 else DEFAULT_PAGE
    args = InstanceQueryArgs(
        statuses=list(request.runtimeStatus),
        completed_from=_micros(request, "completedTimeFrom"),
        completed_to=_micros(request, "completedTimeTo"),
        after_id=request.lastInstanceKey.value if request.HasField("lastInstanceKey") else None,
        limit=limit,
        terminal_only=True,
    )
    records = engine.query(hub, args)
    response = pb.ListInstanceIdsResponse(instanceIds=[r.instance_id for r in records])
    if len(records) == limit:
        response.lastInstanceKey.value = records[-1].instance_id
    return response


def purge(engine: Engine, hub: str, request: pb.PurgeInstancesRequest) -> int:
    """Deletes finished instances by ID, by batch or by filter; running ones are never purged."""
    which = request.WhichOneof("request")
    if which == "instanceId":
        return engine.purge(hub, [request.instanceId], request.recursive)
    if which == "instanceBatch":
        return engine.purge(hub, list(request.instanceBatch.instanceIds), request.recursive)
    if which != "purgeInstanceFilter":
        return 0
    flt = request.purgeInstanceFilter
    total, after = 0, None
    while True:
        args = InstanceQueryArgs(
            statuses=list(flt.runtimeStatus),
            created_from=_micros(flt, "createdTimeFrom"),
            created_to=_micros(flt, "createdTimeTo"),
            after_id=after,
            limit=_PURGE_PAGE,
            terminal_only=True,
        )
        ids = [r.instance_id for r in engine.query(hub, args)]
        if not ids:
            return total
        total += engine.purge(hub, ids, request.recursive)
        after = ids[-1]


def query_entities(entities: Entities, hub: str, query: pb.EntityQuery) -> pb.QueryEntitiesResponse:
    limit = query.pageSize.value if query.HasField("pageSize") and query.pageSize.value > 0 else DEFAULT_PAGE
    args = EntityQueryArgs(
        id_prefix=query.instanceIdStartsWith.value if query.HasField("instanceIdStartsWith") else None,
        modified_from=_micros(query, "lastModifiedFrom"),
        modified_to=_micros(query, "lastModifiedTo"),
        include_transient=query.includeTransient,
        after_id=query.continuationToken.value if query.HasField("continuationToken") else None,
        limit=limit,
    )
    found = entities.query(hub, args)
    response = pb.QueryEntitiesResponse(entities=[entity_metadata(v, query.includeState) for v in found])
    if len(found) == limit:
        response.continuationToken.value = found[-1].record.instance_id
    return response
