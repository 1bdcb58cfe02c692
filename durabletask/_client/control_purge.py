"""Removing a purged instance's activity control entities, so they go with the instance they served.

A bounded activity call's control entity (``@dtscale.activities@<key>``, see ``_replay/activity_control.py``)
exists once its execution cancelled an attempt or ended with attempts running; nothing else removes it. Its key
is ``<instance>#<execution>`` (or the instance alone), or, when that is too long, a readable prefix of it, ``~``
and a digest. A purge lists the control entities whose keys begin as the instance's ID does and asks each one
that could belong to no instance still present to delete itself: a key another existing instance could own (a
digest whose readable part that instance's ID shares) is left to that instance's purge. Public RPCs only.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection

from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._grpc.errors import UnimplementedError
from durabletask._instance_models import DataConverter
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import activity_control as control
from durabletask.entities import EntityInstanceId

#: The ID prefix of every control entity.
ENTITY_PREFIX = f"@{control.CONTROL_ENTITY}@"
#: The operation a control entity deletes itself on.
PURGE = control.PURGE_OPERATION
# A digest key: the readable part, "~", the digest's hex digits (``activity_control.entity_key``).
_READABLE = control.MAX_ENTITY_KEY - control.DIGEST_DIGITS - 1
_DIGEST_KEY = re.compile(rf"(?s)(.{{{_READABLE}}})~[0-9a-f]{{{control.DIGEST_DIGITS}}}")
_PAGE = 500
#: Up to this many purged instances, their control entities are found by their IDs' prefixes (a query each);
#: beyond it, by listing every control entity once.
ONE_BY_ONE = 20


def _keys(prefix: str, purged: list[str]) -> ops.Operation[list[str]]:
    """The keys of the control entities whose IDs begin with ``ENTITY_PREFIX + prefix`` that one of the ``purged``
    instances (sorted) may own. Only those are kept, page by page: a listing of every control entity in the task hub
    holds no more than the purge's own."""
    query = pb.EntityQuery(includeState=False, includeTransient=True)
    query.instanceIdStartsWith.value = ENTITY_PREFIX + prefix
    query.pageSize.value = _PAGE
    keys: list[str] = []
    while True:
        page: pb.QueryEntitiesResponse = yield rq.RpcRequest("QueryEntities", pb.QueryEntitiesRequest(query=query))
        for entity in page.entities:
            key = entity.instanceId[len(ENTITY_PREFIX) :]
            if entity.instanceId.startswith(ENTITY_PREFIX) and _owned_by_one_of(purged, key):
                keys.append(key)
        token = page.continuationToken.value if page.HasField("continuationToken") else ""
        if not token or not page.entities:
            return keys
        query.continuationToken.value = token


def owners(key: str) -> tuple[set[str], str | None]:
    """Who may own the control entity ``key``: the instance IDs it may name, and (for a digest key) the ID prefix
    of the instances whose IDs are too long to be named whole (``None`` for a plain key)."""
    named = {key}
    if "#" in key:
        named.add(key.rsplit("#", 1)[0])  # an execution ID holds no "#"
    digest = _DIGEST_KEY.fullmatch(key)
    if digest is None:
        return named, None
    readable = digest.group(1)
    if "#" in readable:
        named.add(readable.rsplit("#", 1)[0])
    return named, readable


def _owned_by_one_of(purged: list[str], key: str) -> bool:
    """Whether one of the ``purged`` instance IDs (sorted) may own ``key``."""
    named, readable = owners(key)
    if any(_present(purged, instance_id) for instance_id in named):
        return True
    if readable is None:
        return False
    at = bisect.bisect_left(purged, readable)  # an ID too long to be named whole begins with the readable part
    return at < len(purged) and purged[at].startswith(readable)


def _present(ordered: list[str], value: str) -> bool:
    at = bisect.bisect_left(ordered, value)
    return at < len(ordered) and ordered[at] == value


def _exists(instance_id: str) -> ops.Operation[bool]:
    found: pb.GetInstanceResponse = yield rq.RpcRequest(
        "GetInstance", pb.GetInstanceRequest(instanceId=instance_id, getInputsAndOutputs=False), keep_payloads=True
    )
    return bool(found.exists)


def _prefix_taken(prefix: str) -> ops.Operation[bool]:
    query = pb.InstanceQuery(maxInstanceCount=1, fetchInputsAndOutputs=False)
    query.instanceIdPrefix.value = prefix
    found: pb.QueryInstancesResponse = yield rq.RpcRequest(
        "QueryInstances", pb.QueryInstancesRequest(query=query), keep_payloads=True
    )
    return any(s.instanceId.startswith(prefix) for s in found.orchestrationState)


def _orphaned(key: str) -> ops.Operation[bool]:
    """Whether no instance that still exists may own ``key``."""
    named, readable = owners(key)
    for instance_id in sorted(named):
        if (yield from _exists(instance_id)):
            return False
    return readable is None or not (yield from _prefix_taken(readable))


def purge_controls(instance_ids: Collection[str], converter: DataConverter) -> ops.Operation[bool]:
    """Ask the control entities of the purged instances to delete themselves; ``False`` when the backend has no
    entities. A few instances are looked up by their IDs' prefixes, many by one listing of every control entity."""
    purged = sorted(instance_ids)
    if not purged:
        return True
    prefixes = [""] if len(purged) > ONE_BY_ONE else sorted({i[:_READABLE] for i in purged})
    keys: set[str] = set()
    try:
        for prefix in prefixes:
            keys.update((yield from _keys(prefix, purged)))
    except UnimplementedError:
        return False
    for key in sorted(keys):
        if (yield from _orphaned(key)):
            entity = EntityInstanceId(control.CONTROL_ENTITY, key)
            yield from ops.signal_entity(rq.build_signal_entity_request(entity, PURGE, None, None, converter=converter))
    return True
