"""Whether a worker's running bounded attempts must stop: a few reads per interval, however many attempts run.

An attempt must stop when its call cancelled it or gave it up (the orchestration signals the execution's control
entity ``cancel``), or when its execution ended (``end``, signalled in the ending turn; a termination is not a turn
of the orchestration's own, so terminated instances are listed instead). Each interval a worker reads, for all its
attempts together: the control entities changed since its last look (``QueryEntities`` by ID prefix and
modification time) and the instances terminated since then (``ListInstanceIds``). A slow per-attempt
``GetEntity`` + ``GetInstance``, a few attempts per interval, covers what leaves no trace in either (an instance
purged, a backend without ``ListInstanceIds``). Public RPCs only.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import grpc

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import activity_control as control

#: The ID prefix of every control entity (``@name@key``).
ENTITY_PREFIX = f"@{control.CONTROL_ENTITY}@"
#: How far before the last look's backend time the next look reads again: commits whose timestamps were taken
#: before a look but became visible after it are still read.
MARGIN = timedelta(seconds=5)
#: How often at least each attempt gets the slow per-attempt check, and how many such checks one look makes.
FALLBACK_SECONDS = 30.0
FALLBACK_PER_LOOK = 5
PAGE_SIZE = 500
#: The deadline of each RPC: a slow backend delays checks, never the activity.
RPC_TIMEOUT = 10.0

_LIVE = frozenset({pb.ORCHESTRATION_STATUS_RUNNING, pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_SUSPENDED})


class Watched(Protocol):
    """What the checks need of a running attempt (``heartbeats.AttemptHeartbeats`` is one)."""

    instance_id: str
    execution_id: str
    task_id: int
    settings: control.AttemptSettings | None
    next_fallback: float

    @property
    def cancelled(self) -> bool: ...

    def cancel(self) -> None: ...


def first_fallback(now: float) -> float:
    """When an attempt that starts at ``now`` first gets the slow check (spread, so attempts started together
    are not checked together)."""
    return now + FALLBACK_SECONDS * (1.0 + random.random())


class StopChecks:
    """The batched look of one worker, and the per-attempt checks; one look runs at a time."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._lock = threading.Lock()
        # The latest backend timestamp seen (a lower bound of the backend's clock): orchestration updates read by
        # the checks at an attempt's start, entity modifications read by the looks.
        self._server_time: datetime | None = None
        # Every change from this backend time on (less MARGIN) is still to be read by the next look.
        self._floor: datetime | None = None
        self._lists_terminations = True
        self.looks = 0  # batched looks made (for tests and benchmarks)

    def _saw(self, when: datetime) -> None:
        with self._lock:
            if self._server_time is None or when > self._server_time:
                self._server_time = when

    # ---- one attempt ---------------------------------------------------------------------------
    def check_one(self, stub: Any, attempt: Watched) -> None:
        """Read the attempt's control entity and its orchestration's status (at its start, and as the fallback)."""
        settings = attempt.settings
        assert settings is not None
        entity = stub.GetEntity(
            pb.GetEntityRequest(instanceId=f"{ENTITY_PREFIX}{settings.entity_key}", includeState=True),
            timeout=RPC_TIMEOUT,
        )
        if entity.exists and _stops(_state(entity.entity), attempt.task_id):
            attempt.cancel()
            return
        found = stub.GetInstance(pb.GetInstanceRequest(instanceId=attempt.instance_id), timeout=RPC_TIMEOUT)
        state = found.orchestrationState
        if state.HasField("lastUpdatedTimestamp"):
            self._saw(state.lastUpdatedTimestamp.ToDatetime())
        current = state.executionId.value
        if (
            not found.exists
            or state.orchestrationStatus not in _LIVE
            or (attempt.execution_id and current and current != attempt.execution_id)
        ):
            attempt.cancel()

    # ---- all attempts ----------------------------------------------------------------------------
    def look(self, stub: Any, attempts: Sequence[Watched], now: float) -> None:
        """One batched look for ``attempts`` (those not yet asked to stop), then the fallback for a few of them."""
        with self._lock:
            since = self._floor if self._floor is not None else self._server_time
            reached = self._server_time
        since = since - MARGIN if since is not None else None
        self.looks += 1
        newest = self._read_entities(stub, attempts, since)
        self._read_terminations(stub, attempts, since)
        with self._lock:
            # Both are backend times at or before this look's reads: nothing changed after them went unread.
            floors = [t for t in (reached, newest, self._floor) if t is not None]
            self._floor = max(floors) if floors else None
        self._fallback(stub, attempts, now)

    def _read_entities(self, stub: Any, attempts: Sequence[Watched], since: datetime | None) -> datetime | None:
        by_key: dict[str, list[Watched]] = {}
        for attempt in attempts:
            assert attempt.settings is not None
            by_key.setdefault(attempt.settings.entity_key, []).append(attempt)
        newest: datetime | None = None
        for entity in _pages_of_entities(stub, since):
            modified = entity.lastModifiedTime.ToDatetime() if entity.HasField("lastModifiedTime") else None
            if modified is not None and (newest is None or modified > newest):
                newest = modified
            waiting = by_key.get(entity.instanceId[len(ENTITY_PREFIX) :])
            if not waiting:
                continue
            state = _state(entity)
            for attempt in waiting:
                if _stops(state, attempt.task_id):
                    attempt.cancel()
        if newest is not None:
            self._saw(newest)
        return newest

    def _read_terminations(self, stub: Any, attempts: Sequence[Watched], since: datetime | None) -> None:
        if not self._lists_terminations:
            return
        try:
            terminated = set(_terminated_since(stub, since))
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
            self._lists_terminations = False
            self._logger.info("the backend does not list instances; terminations are found by the slower check")
            return
        for attempt in attempts:
            if attempt.instance_id in terminated:
                attempt.cancel()

    def _fallback(self, stub: Any, attempts: Iterable[Watched], now: float) -> None:
        due = sorted((a for a in attempts if a.next_fallback <= now), key=lambda a: a.next_fallback)
        for attempt in due[:FALLBACK_PER_LOOK]:
            attempt.next_fallback = now + FALLBACK_SECONDS
            if attempt.cancelled:
                continue
            try:
                self.check_one(stub, attempt)
            except grpc.RpcError as error:  # checked again after FALLBACK_SECONDS
                self._logger.debug("%s/%d: check failed: %s", attempt.instance_id, attempt.task_id, error)


def _pages_of_entities(stub: Any, since: datetime | None) -> Iterator[pb.EntityMetadata]:
    query = pb.EntityQuery(includeState=True)
    query.instanceIdStartsWith.value = ENTITY_PREFIX
    query.pageSize.value = PAGE_SIZE
    if since is not None:
        query.lastModifiedFrom.FromDatetime(since)
    while True:
        page = stub.QueryEntities(pb.QueryEntitiesRequest(query=query), timeout=RPC_TIMEOUT)
        for entity in page.entities:
            if entity.instanceId.startswith(ENTITY_PREFIX):  # a backend that ignores the prefix costs no mistake
                yield entity
        token = page.continuationToken.value if page.HasField("continuationToken") else ""
        if not token or not page.entities:
            return
        query.continuationToken.value = token


def _terminated_since(stub: Any, since: datetime | None) -> Iterator[str]:
    request = pb.ListInstanceIdsRequest(runtimeStatus=[pb.ORCHESTRATION_STATUS_TERMINATED], pageSize=PAGE_SIZE)
    if since is not None:
        request.completedTimeFrom.FromDatetime(since)
    while True:
        page = stub.ListInstanceIds(request, timeout=RPC_TIMEOUT)
        yield from page.instanceIds
        token = page.lastInstanceKey.value if page.HasField("lastInstanceKey") else ""
        if not token or not page.instanceIds:
            return
        request.lastInstanceKey.value = token


def _state(entity: pb.EntityMetadata) -> dict[str, Any]:
    text = entity.serializedState.value if entity.HasField("serializedState") else ""
    try:
        state = json.loads(text) if text else None
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def _stops(state: dict[str, Any], task_id: int) -> bool:
    """Whether a control entity's state asks attempt ``task_id`` of its execution to stop."""
    if state.get("ended"):
        return True
    cancelled = state.get("cancelled")
    return isinstance(cancelled, list) and task_id in cancelled
