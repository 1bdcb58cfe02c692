"""Subscriptions for both clients: the reads of a subscription's plan as client operations, and the two drivers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._grpc.errors import UnimplementedError
from durabletask._instance_models import DataConverter
from durabletask._streams import reader, wire
from durabletask._streams.wire import StreamItem


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
    if isinstance(step, reader.ReadEntity):
        return _entity_state(step, converter)
    if isinstance(step, reader.ReadHistory):
        return ops.get_orchestration_history(instance_id, execution_id=None, for_work_item_processing=False)
    raise TypeError(f"not a read step: {step!r}")


def _entity_state(step: reader.ReadEntity, converter: DataConverter) -> ops.Operation[Any]:
    metadata = yield from ops.get_entity(step.entity, True, converter=converter)
    if metadata is None:
        return None
    state = metadata.get_state()
    return converter.deserialize(state) if isinstance(state, str) else state


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


def purge(instance_id: str, converter: DataConverter) -> ops.Operation[None]:
    """Remove a purged instance's stream (its head deletes its segments, then itself), if it has one."""
    head = wire.head_entity(instance_id)
    try:
        metadata = yield from ops.get_entity(head, False, converter=converter)
    except UnimplementedError:  # a backend without entities has no streams to remove
        return
    if metadata is not None:
        request = rq.build_signal_entity_request(head, wire.PURGE, None, None, converter=converter)
        yield from ops.signal_entity(request)
