"""A purge that also reports which instances it removed: their streams go, and their stored payloads may go.

Payloads are stored under the instance they belong to, so deleting an instance's payloads is deleting one
folder of the store. The purge response only counts what it removed, so the instances a purge may remove
are listed first (the one named and, for a recursive purge, the sub-orchestrations its history started; or
those a filter matches), and after the purge each is looked up again: only those gone lose their streams and
payloads. A sub-orchestration's result is stored under the sub-orchestration but read by its parent's history
too, so its payloads are kept while its parent still exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._grpc.errors import NotFoundError, UnimplementedError
from durabletask._instance_models import PurgeInstancesResult
from durabletask._proto import orchestrator_service_pb2 as pb

#: Instances listed per page when finding those a filter purge matches.
_PAGE = 500


def _quiet(method: str, request: pb.GetInstanceRequest | pb.StreamInstanceHistoryRequest) -> rq.RpcRequest:
    # Only IDs are read from these answers: their payload tokens are not fetched.
    return rq.RpcRequest(method, request, streaming=method == "StreamInstanceHistory", keep_payloads=True)


def _lookup(instance_id: str) -> ops.Operation[pb.GetInstanceResponse]:
    response: pb.GetInstanceResponse = yield _quiet(
        "GetInstance", pb.GetInstanceRequest(instanceId=instance_id, getInputsAndOutputs=False)
    )
    return response


def _children(instance_id: str) -> ops.Operation[list[str]]:
    """The sub-orchestrations the instance's history started (none if the instance does not exist)."""
    try:
        chunks: list[pb.HistoryChunk] = yield _quiet(
            "StreamInstanceHistory", pb.StreamInstanceHistoryRequest(instanceId=instance_id)
        )
    except NotFoundError:
        return []  # purging a missing instance removes nothing, as the purge itself then says
    return [
        event.subOrchestrationInstanceCreated.instanceId
        for chunk in chunks
        for event in chunk.events
        if event.HasField("subOrchestrationInstanceCreated")
    ]


def _matching(purge_filter: pb.PurgeInstanceFilter) -> ops.Operation[dict[str, str | None]]:
    """Every instance a filter purge may remove, with its parent."""
    found: dict[str, str | None] = {}
    token: str | None = None
    while True:
        query = pb.InstanceQuery(
            runtimeStatus=purge_filter.runtimeStatus,
            maxInstanceCount=_PAGE,
            fetchInputsAndOutputs=False,
        )
        for field in ("createdTimeFrom", "createdTimeTo"):
            if purge_filter.HasField(field):
                getattr(query, field).CopyFrom(getattr(purge_filter, field))
        if token is not None:
            query.continuationToken.value = token
        response: pb.QueryInstancesResponse = yield rq.RpcRequest(
            "QueryInstances", pb.QueryInstancesRequest(query=query), keep_payloads=True
        )
        for state in response.orchestrationState:
            found[state.instanceId] = state.parentInstanceId.value or None
        token = rq.next_token(response.continuationToken if response.HasField("continuationToken") else None, token)
        if token is None:
            return found


def _with_descendants(roots: dict[str, str | None]) -> ops.Operation[dict[str, str | None]]:
    everyone = dict(roots)
    pending = list(roots)
    while pending:
        parent = pending.pop()
        for child in (yield from _children(parent)):
            if child not in everyone:
                everyone[child] = parent
                pending.append(child)
    return everyone


def _parents(instance_ids: Iterable[str]) -> ops.Operation[dict[str, str | None]]:
    parents: dict[str, str | None] = {}
    for instance_id in instance_ids:
        found = yield from _lookup(instance_id)
        if found.exists:
            parents[instance_id] = found.orchestrationState.parentInstanceId.value or None
    return parents


def _gone(instance_ids: Sequence[str]) -> ops.Operation[set[str]]:
    gone: set[str] = set()
    for instance_id in instance_ids:
        if not (yield from _lookup(instance_id)).exists:
            gone.add(instance_id)
    return gone


def purge_reporting(
    purge: rq.RpcRequest, *, with_parents: bool
) -> ops.Operation[tuple[PurgeInstancesResult, dict[str, str | None], set[str]]]:
    """Run ``purge`` (a ``PurgeInstances`` request); returns its result, the instances it may have removed (with
    their parents when ``with_parents``, else ``None`` for those it names) and those among them now gone."""
    request: pb.PurgeInstancesRequest = purge.request  # type: ignore[assignment]
    named: list[str] = []
    candidates: dict[str, str | None] = {}
    try:
        if request.HasField("purgeInstanceFilter"):
            candidates = yield from _matching(request.purgeInstanceFilter)
        else:
            named = [request.instanceId] if request.instanceId else list(request.instanceBatch.instanceIds)
            candidates = (yield from _parents(named)) if with_parents else dict.fromkeys(named)
        if request.recursive:
            candidates = yield from _with_descendants(candidates)
    except UnimplementedError:
        # A backend without a call this needs (QueryInstances, StreamInstanceHistory) still purges; only what
        # was found before it is cleaned up after.
        pass
    result = rq.parse_purge_response((yield purge))
    if not result.deleted_instance_count:
        return result, candidates, set()
    if len(named) == 1 and not request.recursive:
        return result, candidates, set(named)  # the one instance it could remove is the one it removed
    return result, candidates, (yield from _gone(list(candidates)))


def payload_owners(candidates: dict[str, str | None], gone: set[str]) -> ops.Operation[list[str]]:
    """The purged instances whose stored payloads may go: those gone whose parent (if any) is gone too."""
    # A parent that was not among the candidates may be gone all the same (purged earlier).
    outside = {p for i in gone if (p := candidates[i]) is not None and p not in candidates}
    gone = gone | (yield from _gone(sorted(outside)))
    return [i for i in candidates if i in gone and (candidates[i] is None or candidates[i] in gone)]
