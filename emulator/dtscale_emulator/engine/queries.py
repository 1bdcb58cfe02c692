"""Query, list and purge requests: paging and filters translated to storage queries.

Pages are bounded by count and by bytes (:mod:`dtscale_emulator.engine.pages`): a page ends early when its
next item would take the answer over what a client receives by default.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from dtscale_emulator.engine import events
from dtscale_emulator.engine.entities import Entities, EntityView
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.pages import PAGE_BYTES, PAYLOAD_READ, Page
from dtscale_emulator.engine.wire_states import entity_metadata, orchestration_state
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import EntityQueryArgs, InstanceQueryArgs, InstanceRecord

T = TypeVar("T")
DEFAULT_PAGE = 100
#: The largest page any query answers, whatever it asks for: Microsoft's SDK asks for 2**31-1 by default, and one
#: read of a whole task hub would hold the store (and the event loop) for as long as it takes.
MAX_PAGE = 1000
#: A filter purge's steps: PURGE_PAGE instances at first, halved when a step takes longer than PURGE_STEP_SECONDS
#: and doubled again (up to PURGE_MAX_PAGE) once one takes under half of it. A call that needs the store waits for
#: a whole step, so the budget keeps that wait short on a slow or busy machine. Steps of up to 300 purged no faster
#: than steps of 100 at a million stored instances and doubled the p99 of the starts beside them (bench/RESULTS.md).
PURGE_PAGE = 100
PURGE_MAX_PAGE = 100
PURGE_STEP_SECONDS = 0.02
#: A filter purge checkpoints the write-ahead log after about this many instances (and once at its end), from a
#: connection of its own, so that the copy back and its sync never land inside a commit (a short call's, or a purge
#: step's while it holds the store). Each checkpoint syncs the database file, and the log pages a purge leaves
#: (about 2.4 per instance at a million stored: index entries and emptied row and history pages) are written back
#: to scattered places in it; that sync bounds a purge's rate. Checkpointing less often stalls the short calls'
#: commits beside a purge for longer, more often costs the purge itself; bench/store_scale.py measures both.
PURGE_CHECKPOINT_EVERY = 100
#: Entities one CleanEntityStorage call works through; the answer's continuation token asks for the rest.
CLEAN_PAGE = 500


# One thread for every long request's storage steps: concurrent listings and purges queue here instead of
# taking more threads, and the event loop stays free for the short calls meanwhile.
_STEPS = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="emulator-admin")


async def storage_step(work: Callable[[], T]) -> T:
    """Runs one bounded step of a long request (a page, a purge chunk) on the admin thread.

    Measured (bench/admin_load.py, bench/RESULTS.md): run on the event loop, each step kept the loop from
    reading new calls for its whole length, and a start issued during a purge waited for several steps; on a
    thread, the loop keeps serving and a short call waits at most for the store lock of one step.
    """
    # With the call's context, so the step's commits and reads are among those its answer waits for.
    return await asyncio.get_running_loop().run_in_executor(_STEPS, contextvars.copy_context().run, work)


async def between_steps() -> None:
    """Lets the event loop serve other calls between two steps of a long request."""
    await asyncio.sleep(0)


def page_size(requested: int) -> int:
    """The page a query gets: its own size when given, capped at :data:`MAX_PAGE`."""
    return min(requested if requested > 0 else DEFAULT_PAGE, MAX_PAGE)


def _micros(message: object, name: str) -> int | None:
    if not message.HasField(name):  # type: ignore[attr-defined]
        return None
    return events.to_micros(events.to_datetime(getattr(message, name)))


def query_instances(
    engine: Engine, hub: str, query: pb.InstanceQuery, max_bytes: int | None = PAGE_BYTES
) -> pb.QueryInstancesResponse:
    """One page of instances: at most the page size, and at most ``max_bytes`` serialized (``None``: no bound)."""
    limit = page_size(query.maxInstanceCount)
    args = InstanceQueryArgs(
        statuses=list(query.runtimeStatus),
        created_from=_micros(query, "createdTimeFrom"),
        created_to=_micros(query, "createdTimeTo"),
        id_prefix=query.instanceIdPrefix.value if query.HasField("instanceIdPrefix") else None,
        after_id=query.continuationToken.value if query.HasField("continuationToken") else None,
    )
    payloads = query.fetchInputsAndOutputs

    def read(after: str | None, count: int) -> list[InstanceRecord]:
        return engine.query(hub, dataclasses.replace(args, after_id=after, limit=count))

    page = Page[InstanceRecord, pb.OrchestrationState](
        read, lambda r: orchestration_state(r, payloads), lambda r: r.instance_id, max_bytes
    )
    states, token = page.fill(args.after_id, limit, PAYLOAD_READ if payloads else limit + 1)
    response = pb.QueryInstancesResponse(orchestrationState=states)
    if token is not None:
        response.continuationToken.value = token
    return response


def list_instance_ids(
    engine: Engine, hub: str, request: pb.ListInstanceIdsRequest, max_bytes: int | None = PAGE_BYTES
) -> pb.ListInstanceIdsResponse:
    limit = page_size(request.pageSize)
    args = InstanceQueryArgs(
        statuses=list(request.runtimeStatus),
        completed_from=_micros(request, "completedTimeFrom"),
        completed_to=_micros(request, "completedTimeTo"),
        after_id=request.lastInstanceKey.value if request.HasField("lastInstanceKey") else None,
        terminal_only=True,
    )

    def read(after: str | None, count: int) -> list[str]:
        return engine.instance_ids(hub, dataclasses.replace(args, after_id=after, limit=count))

    page = Page[str, str](read, lambda iid: iid, lambda iid: iid, max_bytes)
    ids, token = page.fill(args.after_id, limit, limit + 1)
    response = pb.ListInstanceIdsResponse(instanceIds=ids)
    if token is not None:
        response.lastInstanceKey.value = token
    return response


# A purge timeout longer than a day is treated as a day: far beyond any RPC deadline anyway.
_MAX_PURGE_TIMEOUT = 86_400.0


async def purge(engine: Engine, hub: str, request: pb.PurgeInstancesRequest) -> tuple[int, bool]:
    """Deletes finished instances by ID, by batch or by filter; running ones are never purged.

    Returns the number deleted and whether nothing the request names is left: a filter purge with a
    ``timeout`` stops once that much real time has passed, between pages.
    """
    which = request.WhichOneof("request")
    if which == "instanceId":
        return engine.purge(hub, [request.instanceId], request.recursive), True
    if which == "instanceBatch":
        return engine.purge(hub, list(request.instanceBatch.instanceIds), request.recursive), True
    if which != "purgeInstanceFilter":
        return 0, True
    return await _purge_by_filter(engine, hub, request.purgeInstanceFilter, request.recursive)


async def _purge_by_filter(engine: Engine, hub: str, flt: pb.PurgeInstanceFilter, recursive: bool) -> tuple[int, bool]:
    # The timeout bounds real (monotonic) time on purpose: it protects the caller's RPC deadline, which
    # the emulator's injectable clock knows nothing about.
    deadline = None
    if flt.HasField("timeout"):
        # Read the raw fields: an absurd duration (e.g. 2**63 s) must mean "no practical limit", not an error.
        seconds = flt.timeout.seconds + flt.timeout.nanos / 1e9
        deadline = time.monotonic() + min(max(seconds, 0.0), _MAX_PURGE_TIMEOUT)
    total, after, size, unsynced = 0, None, PURGE_PAGE, 0
    while True:
        # Read a page, delete it, serve other calls, repeat: each step is one short transaction.
        keys, deleted, seconds = await storage_step(
            functools.partial(_purge_step, engine, hub, flt, after, size, recursive)
        )
        total, unsynced = total + deleted, unsynced + deleted
        last = not keys or (deadline is not None and time.monotonic() >= deadline)
        if unsynced >= PURGE_CHECKPOINT_EVERY or (last and unsynced):
            # The purge's log pages go back to the database here, not inside the next short call's commit.
            await storage_step(engine.backend.checkpoint)
            unsynced = 0
        if not keys:
            return total, True
        after, size = keys[-1], next_purge_page(size, seconds)
        if last:
            return total, not _purge_page(engine, hub, flt, after, 1)
        await between_steps()


def next_purge_page(size: int, seconds: float) -> int:
    """The size of a filter purge's next step, after one of ``size`` instances took ``seconds``."""
    if seconds > PURGE_STEP_SECONDS:
        return max(1, size // 2)
    if seconds < PURGE_STEP_SECONDS / 2:
        return max(1, min(size * 2, PURGE_MAX_PAGE))
    return size


def _purge_step(
    engine: Engine, hub: str, flt: pb.PurgeInstanceFilter, after: PurgeKey | None, size: int, recursive: bool
) -> tuple[list[PurgeKey], int, float]:
    """One page of a filter purge: (the page's keys, how many were deleted, seconds the deletion took)."""
    keys = _purge_page(engine, hub, flt, after, size)
    began = time.monotonic()
    deleted = engine.purge(hub, [key[-1] for key in keys], recursive) if keys else 0
    return keys, deleted, time.monotonic() - began


#: Where a filter purge is: the last key it reached, whose last item is an instance ID.
PurgeKey = tuple[Any, ...]


def _purge_page(
    engine: Engine, hub: str, flt: pb.PurgeInstanceFilter, after: PurgeKey | None, limit: int
) -> list[PurgeKey]:
    args = InstanceQueryArgs(
        statuses=list(flt.runtimeStatus),
        created_from=_micros(flt, "createdTimeFrom"),
        created_to=_micros(flt, "createdTimeTo"),
        limit=limit,
        terminal_only=True,
    )
    if (args.created_from is not None or args.created_to is not None) and not args.statuses:
        # "Everything older than": oldest first, the order the rows were written in, so each step empties whole
        # pages. A filter on statuses walks those statuses instead (in ID order), reading no entry of another.
        return list(engine.instance_keys_by_age(hub, args, after))
    ids = engine.instance_ids(hub, dataclasses.replace(args, after_id=after[-1] if after else None))
    return [(iid,) for iid in ids]


def query_entities(
    entities: Entities, hub: str, query: pb.EntityQuery, max_bytes: int | None = PAGE_BYTES
) -> pb.QueryEntitiesResponse:
    limit = page_size(query.pageSize.value if query.HasField("pageSize") else 0)
    args = EntityQueryArgs(
        id_prefix=query.instanceIdStartsWith.value if query.HasField("instanceIdStartsWith") else None,
        modified_from=_micros(query, "lastModifiedFrom"),
        modified_to=_micros(query, "lastModifiedTo"),
        include_transient=query.includeTransient,
        after_id=query.continuationToken.value if query.HasField("continuationToken") else None,
    )
    with_state = query.includeState

    def read(after: str | None, count: int) -> list[EntityView]:
        return entities.query(hub, dataclasses.replace(args, after_id=after, limit=count))

    page = Page[EntityView, pb.EntityMetadata](
        read, lambda v: entity_metadata(v, with_state), lambda v: v.record.instance_id, max_bytes
    )
    found, token = page.fill(args.after_id, limit, PAYLOAD_READ if with_state else limit + 1)
    response = pb.QueryEntitiesResponse(entities=found)
    if token is not None:
        response.continuationToken.value = token
    return response


def clean_entity_storage(
    entities: Entities, hub: str, request: pb.CleanEntityStorageRequest
) -> pb.CleanEntityStorageResponse:
    after = request.continuationToken.value if request.HasField("continuationToken") else None
    removed, released, next_after = entities.clean(
        hub, request.removeEmptyEntities, request.releaseOrphanedLocks, after or None, CLEAN_PAGE
    )
    response = pb.CleanEntityStorageResponse(emptyEntitiesRemoved=removed, orphanedLocksReleased=released)
    if next_after is not None:
        response.continuationToken.value = next_after
    return response
