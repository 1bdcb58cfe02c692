"""Subscriptions for both clients: the reads of a subscription's plan as client operations, and the two drivers."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from durabletask._client import control_purge, payload_purge
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client.call_plan import Answered
from durabletask._grpc.errors import UnimplementedError
from durabletask._instance_models import DataConverter, PurgeInstancesResult
from durabletask._protocol_extensions import ENTITY_VERSION, ENTITY_WAIT_INSTANCE, ENTITY_WAIT_MS
from durabletask._streams import reader, wire
from durabletask._streams.wire import StreamItem
from durabletask.entities.entity_metadata import EntityMetadata

#: Seconds a held read's call may take beyond the wait it asks for, before its deadline cuts it.
HOLD_DEADLINE_MARGIN = 10.0


def plan(
    instance_id: str,
    topics: Sequence[str] | None,
    after: str | None,
    timeout: float | None,
    converter: DataConverter,
) -> reader.Plan:
    """The subscription's plan (its arguments checked now), decoding items with the client's converter."""

    def decode(text: str | None) -> Any:
        return converter.deserialize(text) if text else None

    return reader.subscription(instance_id, topics=topics, after=after, timeout=timeout, decode=decode)


def operation(step: reader.Step, instance_id: str, converter: DataConverter) -> ops.Operation[Any]:
    """The client operation a read step needs; its result is what the plan is sent back."""
    if isinstance(step, reader.ReadStatus):
        return ops.get_orchestration_state(instance_id, fetch_payloads=False, converter=converter)
    if isinstance(step, reader.ReadHead):
        return _head(step, instance_id, converter)
    if isinstance(step, reader.ReadEntity):
        return _entity_state(step, converter)
    if isinstance(step, reader.ReadHistory):
        return ops.get_orchestration_history(instance_id, execution_id=None, for_work_item_processing=False)
    raise TypeError(f"not a read step: {step!r}")


def _entity_state(step: reader.ReadEntity, converter: DataConverter) -> ops.Operation[Any]:
    metadata = yield from ops.get_entity(step.entity, True, converter=converter)
    return _decoded(metadata, converter)


def _decoded(metadata: EntityMetadata | None, converter: DataConverter) -> Any:
    if metadata is None:
        return None
    state = metadata.get_state()
    return converter.deserialize(state) if isinstance(state, str) else state


def _head(step: reader.ReadHead, instance_id: str, converter: DataConverter) -> ops.Operation[reader.HeadRead]:
    """``GetEntity`` of the head with the held-read metadata (docs/streams.md, "How a subscriber waits")."""
    metadata = [(ENTITY_WAIT_MS, str(math.ceil(step.wait * 1000)))]
    if step.seen is not None:
        metadata.append((ENTITY_VERSION, step.seen))
    if step.until_end:
        metadata.append((ENTITY_WAIT_INSTANCE, instance_id))
    request = rq.build_get_entity_request(step.entity, True)
    # A held read's own deadline leaves the server room to answer before it; a read at once keeps the client's.
    timeout = step.wait + HOLD_DEADLINE_MARGIN if step.wait > 0 else request.timeout
    request = dataclasses.replace(request, metadata=tuple(metadata), timeout=timeout)
    answer = yield request
    if not isinstance(answer, Answered):  # a shell that cannot send metadata: the read was not held
        answer = Answered(answer, ())
    response = rq.parse_get_entity_response(answer.response, True, converter)
    return reader.HeadRead(_decoded(response, converter), answer.trailer(ENTITY_VERSION))


def follow(
    steps: reader.Plan, instance_id: str, converter: DataConverter, run: Callable[[ops.Operation[Any]], Any]
) -> Iterator[StreamItem]:
    """Drive a plan with blocking calls."""
    reply: Any = None
    while True:
        try:
            step = steps.send(reply)
        except StopIteration:
            return
        reply = None
        if isinstance(step, reader.Deliver):
            yield step.item
        elif isinstance(step, reader.Sleep):
            time.sleep(step.seconds)
        else:
            reply = run(operation(step, instance_id, converter))


async def follow_async(
    steps: reader.Plan,
    instance_id: str,
    converter: DataConverter,
    run: Callable[[ops.Operation[Any]], Awaitable[Any]],
) -> AsyncIterator[StreamItem]:
    """Drive a plan on the event loop."""
    reply: Any = None
    while True:
        try:
            step = steps.send(reply)
        except StopIteration:
            return
        reply = None
        if isinstance(step, reader.Deliver):
            yield step.item
        elif isinstance(step, reader.Sleep):
            await asyncio.sleep(step.seconds)
        else:
            reply = await run(operation(step, instance_id, converter))


def purge(
    request: rq.RpcRequest, converter: DataConverter, *, payloads: bool
) -> ops.Operation[tuple[PurgeInstancesResult, list[str]]]:
    """Run a purge (a ``PurgeInstances`` request: one instance, or a filter; recursive or not), then remove the
    stream and the activity control entities of every instance it removed; returns its result and, with
    ``payloads``, the instances whose stored payloads may go (see ``payload_purge``)."""
    result, candidates, gone = yield from payload_purge.purge_reporting(request, with_parents=payloads)
    entities = True
    for instance_id in sorted(gone):
        if not (yield from _purge_stream(instance_id, converter)):
            entities = False  # a backend without entities: no instance has a stream or control entities
            break
    if entities:
        yield from control_purge.purge_controls(gone, converter)
    owners = (yield from payload_purge.payload_owners(candidates, gone)) if payloads else []
    return result, owners


def _purge_stream(instance_id: str, converter: DataConverter) -> ops.Operation[bool]:
    """Remove a purged instance's stream (its head deletes its segments, then itself), if it has one; ``False``
    when the backend has no entities."""
    head = wire.head_entity(instance_id)
    try:
        metadata = yield from ops.get_entity(head, False, converter=converter)
    except UnimplementedError:
        return False
    if metadata is not None:
        request = rq.build_signal_entity_request(head, wire.PURGE, None, None, converter=converter)
        yield from ops.signal_entity(request)
    return True
