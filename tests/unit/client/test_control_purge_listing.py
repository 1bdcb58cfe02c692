"""A purge of many instances lists every control entity of the task hub: it must keep only the keys the purged
instances may own, so its memory follows the purge, not the task hub."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

from durabletask._client import control_purge
from durabletask._client import requests as rq
from durabletask._instance_models import DEFAULT_CONVERTER
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.activity_control import entity_key

EXECUTION = "0123456789abcdef0123456789abcdef"
PAGES = 200
PAGE = 500


def _pages(owned: list[str]) -> Iterator[pb.QueryEntitiesResponse]:
    """A task hub's control entities, one page at a time: many of instances still there, and the ``owned`` ones."""
    for number in range(PAGES):
        page = pb.QueryEntitiesResponse()
        for i in range(PAGE):
            page.entities.add(instanceId=control_purge.ENTITY_PREFIX + entity_key(f"other-{number}-{i:04}", EXECUTION))
        if number == PAGES - 1:
            for key in owned:
                page.entities.add(instanceId=control_purge.ENTITY_PREFIX + key)
        else:
            page.continuationToken.value = str(number + 1)
        yield page


def _answer(request: rq.RpcRequest, pages: Iterator[pb.QueryEntitiesResponse], signalled: list[str]) -> Any:
    if request.method == "QueryEntities":
        return next(pages)
    if request.method == "GetInstance":
        return pb.GetInstanceResponse(exists=False)
    if request.method == "QueryInstances":
        return pb.QueryInstancesResponse()
    assert request.method == "SignalEntity"
    signalled.append(request.request.instanceId)  # type: ignore[attr-defined]
    return pb.SignalEntityResponse()


def test_a_purge_of_many_instances_keeps_only_the_keys_they_may_own_while_it_lists_every_control_entity() -> None:
    purged = [f"purged-{i:03}" for i in range(control_purge.ONE_BY_ONE + 5)]
    owned = [entity_key(instance_id, EXECUTION) for instance_id in purged]
    pages = _pages(owned)
    signalled: list[str] = []
    operation = control_purge.purge_controls(purged, DEFAULT_CONVERTER)
    tracemalloc.start()
    try:
        reply: Any = None
        while True:
            try:
                request = operation.send(reply)
            except StopIteration as done:
                assert done.value is True
                break
            reply = _answer(request, pages, signalled)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sorted(signalled) == sorted(f"@{control_purge.control.CONTROL_ENTITY}@{key}" for key in owned)
    # 100,000 keys of other instances held at once take well over 10 MB; a page at a time, about half a MB.
    assert peak < 5_000_000, peak
