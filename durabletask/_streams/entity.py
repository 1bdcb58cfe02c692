"""The built-in stream entities: a head that numbers, attributes and retains items, and the sealed segments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from durabletask._streams import wire
from durabletask.entities.entity_context import EntityContext

#: Stored item: ``[offset, topic, encoded data, time, task ID, attempt]``.
StoredItem = list[Any]


def new_head_state() -> dict[str, Any]:
    return {"next": 0, "first": 0, "items": [], "hb": 0, "total": 0, "segs": [], "nseg": 0, "prod": {}, "att": {}}


def make_head_entity(max_instance_bytes: int = wire.DEFAULT_MAX_INSTANCE_BYTES) -> Callable[[EntityContext, Any], None]:
    """The head entity, retaining at most ``max_instance_bytes`` of items per instance (oldest dropped first)."""
    if not isinstance(max_instance_bytes, int) or max_instance_bytes < wire.MAX_ITEM_BYTES:
        raise ValueError(
            f"max_instance_bytes: expected an int of at least {wire.MAX_ITEM_BYTES} (one item), "
            f"got {max_instance_bytes!r}"
        )

    def dtscale_stream(ctx: EntityContext, batch: Any) -> None:
        key = ctx.entity_id.key  # the stream's key (see wire.stream_key), which names its segments too
        if ctx.operation == wire.PURGE:
            state = ctx.get_state()
            for number, *_ in (state or {}).get("segs", []):
                ctx.signal_entity(wire.segment_of_key(key, number), wire.PURGE)
            ctx.delete_state()
            return
        if ctx.operation != wire.APPEND:
            raise ValueError(f"the stream entity has no operation {ctx.operation!r}")
        state = ctx.get_state() or new_head_state()
        if append(state, batch):
            seal(state, lambda number, items: ctx.signal_entity(wire.segment_of_key(key, number), "put", items))
            trim(
                state,
                max_instance_bytes,
                lambda number: ctx.signal_entity(wire.segment_of_key(key, number), wire.PURGE),
            )
            ctx.set_state(state)

    return dtscale_stream


def dtscale_streamsegment(ctx: EntityContext, items: Any) -> None:
    """A sealed segment: written once by its head, deleted when the head drops or purges it."""
    if ctx.operation == "put":
        ctx.set_state({"items": items})
    elif ctx.operation == wire.PURGE:
        ctx.delete_state()
    else:
        raise ValueError(f"the stream segment entity has no operation {ctx.operation!r}")


def append(state: dict[str, Any], batch: dict[str, Any]) -> bool:
    """Number and store a batch; ``False`` for a batch already stored (a signal delivered twice)."""
    producer, number = batch["p"], batch["s"]
    seen = state["prod"].get(producer)
    if seen is not None and number <= seen:
        return False
    state["prod"][producer] = number
    task_id: int | None = None
    attempt: int | None = None
    task = batch.get("task")
    if task is not None:
        # Attempts of one task are numbered in the order their first items arrive: signals reach an entity in
        # the order they were sent, so a crashed attempt's items all come before its retry's.
        runs: dict[str, int] = state["att"].setdefault(task, {})
        attempt = runs.setdefault(producer, len(runs) + 1)
        task_id = int(task.rsplit("|", 1)[1])
    for topic, encoded, when in batch["items"]:
        item: StoredItem = [state["next"], topic, encoded, when, task_id, attempt]
        size = wire.entry_size(item)
        state["items"].append(item)
        state["hb"] += size
        state["total"] += size
        state["next"] += 1
    return True


def seal(state: dict[str, Any], put: Callable[[int, list[StoredItem]], None]) -> None:
    """Move the head's items to a new segment once they reach the segment size."""
    items: list[StoredItem] = state["items"]
    if state["hb"] < wire.SEGMENT_BYTES or not items:
        return
    number = state["nseg"]
    put(number, items)
    state["segs"].append([number, items[0][0], items[-1][0], state["hb"]])
    state["nseg"] = number + 1
    state["items"] = []
    state["hb"] = 0


def trim(state: dict[str, Any], cap: int, drop: Callable[[int], None]) -> None:
    """Drop the oldest segments, then the oldest head items, until the instance is within ``cap``."""
    while state["total"] > cap and state["segs"]:
        number, _, last, size = state["segs"].pop(0)
        drop(number)
        state["first"] = last + 1
        state["total"] -= size
    items: list[StoredItem] = state["items"]
    while state["total"] > cap and len(items) > 1:
        item = items.pop(0)
        size = wire.entry_size(item)
        state["hb"] -= size
        state["total"] -= size
        state["first"] = item[0] + 1
