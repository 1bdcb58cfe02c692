"""The server's durable records (store items, assistants): entity operations whose callers wait for them.

A client can only signal an entity, so a write that must be seen by the next request (a ``PUT`` then a ``GET``, on
any server) runs through a small orchestration that calls the entity and ends with the operation's result. The
caller waits for that orchestration, then purges it. Reads go to the entity's state directly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Generator
from typing import Any

from durabletask import task
from durabletask.client import AsyncTaskHubGrpcClient, OrchestrationState, OrchestrationStatus, TaskHubGrpcClient
from durabletask.entities import DurableEntity, EntityInstanceId
from durabletask.extensions.langgraph._server.errors import HttpError

RECORD_OPERATION = "lgs.record_operation"
"""The orchestrator that carries one operation to a record entity and returns its result."""
STORE_ENTITY = "lgs.storeitem"
"""The entity holding one store item."""
OPERATION_TIMEOUT = 30.0
"""Seconds a request waits for its write to be applied before answering 503."""


def record_operation(ctx: task.OrchestrationContext, request: Any) -> Generator[task.Task[Any], Any, Any]:
    """Call ``request["entity"]``'s ``request["operation"]`` with ``request["input"]`` and return its result."""
    if not isinstance(request, dict) or not isinstance(request.get("entity"), str):
        raise ValueError("the input must be {'entity': '@name@key', 'operation': ..., 'input': ...}")
    entity = EntityInstanceId.parse(request["entity"])
    return (yield ctx.call_entity(entity, str(request["operation"]), request.get("input")))


def _start(entity: EntityInstanceId, operation: str, payload: Any) -> dict[str, Any]:
    return {
        "orchestrator": RECORD_OPERATION,
        "input": {"entity": str(entity), "operation": operation, "input": payload},
        "instance_id": f"lgs-op-{uuid.uuid4().hex}",
    }


def _outcome(entity: EntityInstanceId, operation: str, state: OrchestrationState | None) -> Any:
    if state is not None and state.runtime_status == OrchestrationStatus.COMPLETED:
        output = state.serialized_output
        return json.loads(output) if output else None
    detail = state.failure_details.message if state is not None and state.failure_details else "no outcome"
    raise HttpError(503, f"the task hub could not apply '{operation}' to {entity}: {detail}")


def _timed_out(entity: EntityInstanceId, operation: str) -> HttpError:
    return HttpError(
        503,
        f"'{operation}' on {entity} was not applied within {OPERATION_TIMEOUT:.0f} s: is a worker serving this "
        "project running (durabletask langgraph worker, or dev)?",
    )


async def call_record(client: AsyncTaskHubGrpcClient, entity: EntityInstanceId, operation: str, payload: Any) -> Any:
    """Run one entity operation and wait for it; returns the operation's result.

    Raises:
        HttpError: 503 when no worker applied it in time, or it failed.
    """
    start = _start(entity, operation, payload)
    instance_id = await client.schedule_new_orchestration(
        start["orchestrator"], input=start["input"], instance_id=start["instance_id"]
    )
    try:
        state = await client.wait_for_orchestration_completion(instance_id, timeout=OPERATION_TIMEOUT)
    except TimeoutError:
        raise _timed_out(entity, operation) from None
    result = _outcome(entity, operation, state)
    await client.purge_orchestration(instance_id)
    return result


def call_record_sync(client: TaskHubGrpcClient, entity: EntityInstanceId, operation: str, payload: Any) -> Any:
    """:func:`call_record` for a synchronous client (a graph's store inside a node)."""
    start = _start(entity, operation, payload)
    instance_id = client.schedule_new_orchestration(
        start["orchestrator"], input=start["input"], instance_id=start["instance_id"]
    )
    try:
        state = client.wait_for_orchestration_completion(instance_id, timeout=OPERATION_TIMEOUT)
    except TimeoutError:
        raise _timed_out(entity, operation) from None
    result = _outcome(entity, operation, state)
    client.purge_orchestration(instance_id)
    return result


class StoreItemRecord(DurableEntity):
    """One item of the store: ``{namespace, key, value, created_at, updated_at, expires_at}``.

    Times come with each operation (from the server that received the request), so an operation applied again
    after a crash writes the same record.
    """

    def put(self, item: dict[str, Any]) -> None:
        """Write the item, keeping its first ``created_at``."""
        current = self.get_state(dict)
        if isinstance(current, dict) and current.get("created_at") and not _expired(current, item["updated_at"]):
            item = {**item, "created_at": current["created_at"]}
        self.set_state(item)

    def remove(self, _: Any = None) -> None:
        """Delete the item (nothing happens when there is none)."""
        self.set_state(None)

    def touch(self, change: dict[str, Any]) -> None:
        """Push an item's expiry later (a read that refreshes its TTL); never earlier, never a deleted item."""
        current = self.get_state(dict)
        if not isinstance(current, dict) or current.get("expires_at") is None:
            return
        if str(change["expires_at"]) > str(current["expires_at"]):
            self.set_state({**current, "expires_at": change["expires_at"]})

    def expire(self, change: dict[str, Any]) -> None:
        """Delete the item if it has expired by ``change["now"]`` (a read found it past its TTL)."""
        current = self.get_state(dict)
        if isinstance(current, dict) and _expired(current, str(change["now"])):
            self.set_state(None)


def _expired(item: dict[str, Any], now: str) -> bool:
    expires = item.get("expires_at")
    return expires is not None and str(expires) <= now
