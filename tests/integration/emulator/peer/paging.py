"""Counts the RPCs an SDK's paging calls make against an emulator; runs under either SDK's interpreter.

Usage: python paging.py HOST:PORT TASKHUB INSTANCE_PREFIX ENTITY_PREFIX; prints one JSON line.
"""

from __future__ import annotations

import collections
import json
import sys
from typing import Any

import grpc

from durabletask import client
from durabletask.entities import EntityInstanceId


class Counter(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.calls[details.method.rsplit("/", 1)[-1]] += 1
        return continuation(details, request)


def main(address: str, hub: str, prefix: str, entity_prefix: str) -> dict[str, Any]:
    counter = Counter()
    c = client.TaskHubGrpcClient(host_address=address, metadata=[("taskhub", hub)], interceptors=[counter])
    states = c.get_all_orchestration_states(client.OrchestrationQuery(instance_id_prefix=prefix, max_instance_count=2))
    query_calls = counter.calls["QueryInstances"]
    everything = c.get_all_orchestration_states(client.OrchestrationQuery(instance_id_prefix=prefix))
    default_calls = counter.calls["QueryInstances"] - query_calls
    entities = c.get_all_entities(client.EntityQuery(instance_id_starts_with=entity_prefix, page_size=2))
    pages, token = [], None
    while True:
        page = c.list_instance_ids(page_size=2, continuation_token=token)
        pages.append(len(page.items))
        token = page.continuation_token
        if token is None:
            break
    return {
        "instances": len(states),
        "query_calls": query_calls,
        "instances_default_page": len(everything),
        "default_page_calls": default_calls,
        "entities": len(entities),
        "entity_calls": counter.calls["QueryEntities"],
        "id_pages": pages,
        "id_calls": counter.calls["ListInstanceIds"],
        "entity_ids": sorted(str(e.id) for e in entities)
        == sorted(str(EntityInstanceId("counter", f"{entity_prefix.split('@')[-1]}{i}")) for i in range(4)),
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:5])))
