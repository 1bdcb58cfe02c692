"""What must hold however concurrent work interleaved: checks on stored histories, statuses and journals.

Each check returns the problems it found as sentences (empty: it holds), so one run reports all of them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from dtscale_emulator.storage import InstanceRecord
from durabletask._proto import orchestrator_service_pb2 as pb

TERMINAL = (pb.ORCHESTRATION_STATUS_COMPLETED, pb.ORCHESTRATION_STATUS_FAILED, pb.ORCHESTRATION_STATUS_TERMINATED)
#: History events an orchestrator action makes, each carrying the action's sequence number as its eventId.
ACTION_KINDS = frozenset(
    (
        "taskScheduled",
        "timerCreated",
        "subOrchestrationInstanceCreated",
        "eventSent",
        "entityOperationSignaled",
        "entityOperationCalled",
        "entityLockRequested",
        "entityUnlockSent",
    )
)
#: Actions that get a result event.
_ANSWERED = frozenset(("taskScheduled", "timerCreated", "subOrchestrationInstanceCreated"))
#: Result kinds and how each names the action it answers.
_RESULTS: dict[str, tuple[str, Callable[[pb.HistoryEvent], int]]] = {
    "taskCompleted": ("taskScheduled", lambda e: e.taskCompleted.taskScheduledId),
    "taskFailed": ("taskScheduled", lambda e: e.taskFailed.taskScheduledId),
    "timerFired": ("timerCreated", lambda e: e.timerFired.timerId),
    "subOrchestrationInstanceCompleted": (
        "subOrchestrationInstanceCreated",
        lambda e: e.subOrchestrationInstanceCompleted.taskScheduledId,
    ),
    "subOrchestrationInstanceFailed": (
        "subOrchestrationInstanceCreated",
        lambda e: e.subOrchestrationInstanceFailed.taskScheduledId,
    ),
}


def _kind(event: pb.HistoryEvent) -> str:
    return str(event.WhichOneof("eventType"))


def history_problems(history: Sequence[pb.HistoryEvent], stored_length: int, finished: bool) -> list[str]:
    """A well-formed history of one execution.

    Args:
        stored_length: What the store counts as the history's length: it matches when sequence numbers are dense.
        finished: The execution completed with nothing left pending, so every action must have its result.
    """
    problems: list[str] = []
    kinds = [_kind(e) for e in history]
    if stored_length != len(history):
        problems.append(f"history sequence numbers are not dense: {len(history)} events, stored length {stored_length}")
    if not history:
        return problems
    started = [i for i, kind in enumerate(kinds) if kind == "executionStarted"]
    if len(started) != 1:
        problems.append(f"{len(started)} executionStarted events in one execution")
    elif any(kind != "orchestratorStarted" for kind in kinds[: started[0]]):
        problems.append(f"events before executionStarted: {kinds[: started[0]]}")
    ended = [i for i, kind in enumerate(kinds) if kind == "executionCompleted"]
    if len(ended) > 1 or (ended and ended[0] != len(kinds) - 1):
        problems.append(f"executionCompleted at {ended} in a history of {len(kinds)} events")
    problems.extend(_action_problems(history, finished))
    problems.extend(_entity_problems(history, finished))
    return problems


def _action_problems(history: Sequence[pb.HistoryEvent], finished: bool) -> list[str]:
    """Action IDs run from 1 without gaps; each result answers the latest unanswered action with its ID.

    A retried activity or sub-orchestration is scheduled again under its first ID, once the previous try has
    failed (both SDKs do this), so an ID may be scheduled more than once, but never while a try is open.
    """
    problems: list[str] = []
    kinds: dict[int, str] = {}
    open_ids: set[int] = set()
    for event in history:
        kind = _kind(event)
        if kind in ACTION_KINDS:
            action_id = event.eventId
            if kinds.setdefault(action_id, kind) != kind:
                problems.append(f"action id {action_id} used by {kinds[action_id]} and {kind}")
            elif action_id in open_ids:
                problems.append(f"{kind} {action_id} scheduled again while its previous try was open")
            if kind in _ANSWERED:
                open_ids.add(action_id)
        elif kind in _RESULTS:
            wanted, target = _RESULTS[kind]
            action_id = target(event)
            if kinds.get(action_id) != wanted or action_id not in open_ids:
                what = kinds.get(action_id, "not in the history")
                problems.append(f"{kind} for action {action_id} ({what}), which has no open try")
            open_ids.discard(action_id)
    ids = sorted(kinds)
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"action ids are not dense from 1: {ids}")
    if finished:
        problems.extend(f"{kinds[i]} {i} has no result" for i in sorted(open_ids) if kinds[i] != "timerCreated")
    return problems


def _entity_problems(history: Sequence[pb.HistoryEvent], finished: bool) -> list[str]:
    problems: list[str] = []
    calls = {e.entityOperationCalled.requestId for e in history if e.HasField("entityOperationCalled")}
    results = Counter(
        e.entityOperationCompleted.requestId
        if e.HasField("entityOperationCompleted")
        else e.entityOperationFailed.requestId
        for e in history
        if e.HasField("entityOperationCompleted") or e.HasField("entityOperationFailed")
    )
    problems.extend(f"entity call {r} answered {n} times" for r, n in results.items() if n > 1)
    problems.extend(f"entity result for {r}, which was never called" for r in results if r not in calls)
    if finished:
        problems.extend(f"entity call {r} has no result" for r in calls if not results[r])
    requested = {e.entityLockRequested.criticalSectionId for e in history if e.HasField("entityLockRequested")}
    granted = Counter(e.entityLockGranted.criticalSectionId for e in history if e.HasField("entityLockGranted"))
    problems.extend(f"lock {c} granted {n} times" for c, n in granted.items() if n > 1 or c not in requested)
    return problems


def status_problems(record: InstanceRecord, history: Sequence[pb.HistoryEvent]) -> list[str]:
    """The instance's status, output and failure say what its history says."""
    ended = [e for e in history if e.HasField("executionCompleted")]
    status = pb.OrchestrationStatus.Name(record.status)
    if record.status == pb.ORCHESTRATION_STATUS_PENDING:
        return [] if not history else [f"PENDING with {len(history)} history events"]
    if record.status in TERMINAL:
        if not history and record.status == pb.ORCHESTRATION_STATUS_TERMINATED:
            return []  # terminated before it ever ran: nothing for a worker to record
        if not ended:
            return [f"{status} but the history has no executionCompleted: {[_kind(e) for e in history]}"]
        return _ending_problems(record, ended[-1].executionCompleted)
    if ended:
        return [f"{status} but the history has executionCompleted"]
    suspended = False
    for event in history:
        if event.HasField("executionSuspended"):
            suspended = True
        elif event.HasField("executionResumed"):
            suspended = False
    if suspended != (record.status == pb.ORCHESTRATION_STATUS_SUSPENDED):
        return [f"status {status}, but the history says suspended={suspended}"]
    return []


def _ending_problems(record: InstanceRecord, done: pb.ExecutionCompletedEvent) -> list[str]:
    problems = []
    if done.orchestrationStatus != record.status:
        problems.append(
            f"status {pb.OrchestrationStatus.Name(record.status)}, history says "
            f"{pb.OrchestrationStatus.Name(done.orchestrationStatus)}"
        )
    if record.status != pb.ORCHESTRATION_STATUS_FAILED and (done.result.value or None) != record.output:
        problems.append(f"output {record.output!r}, history says {done.result.value!r}")
    if record.status == pb.ORCHESTRATION_STATUS_FAILED and record.failure != done.failureDetails.SerializeToString():
        problems.append("failure details differ from the history's")
    return problems


def exactly_once_in_order(seen: Sequence[Any], sent: Sequence[Any]) -> list[str]:
    """Everything sent arrived once, in the order it was sent."""
    if list(seen) == list(sent):
        return []
    repeated = sorted(v for v, n in Counter(seen).items() if n > 1)
    lost = [v for v in sent if v not in seen]
    return [f"seen {list(seen)}, sent {list(sent)} (repeated {repeated}, lost {lost})"]


def at_most_once_in_order(seen: Sequence[Any]) -> list[str]:
    """Values from one sender, some of which may have been dropped, arrived in order and never twice."""
    if all(a < b for a, b in itertools.pairwise(seen)):
        return []
    return [f"seen {list(seen)}: out of order or repeated"]


def journal_problems(
    entries: Iterable[Sequence[Any]], sent: dict[str, list[int]], locked: dict[str, list[int]]
) -> list[str]:
    """An entity's journal of ``[sender, seq]`` entries: each sender's entries once each and in order, and each
    critical section's entries with nothing from another sender between them."""
    entries = [tuple(e) for e in entries]
    problems: list[str] = []
    for who, seqs in sent.items():
        mine = [seq for sender, seq in entries if sender == who]
        problems.extend(f"{who}: {p}" for p in exactly_once_in_order(mine, seqs))
    for who, seqs in locked.items():
        at = [i for i, entry in enumerate(entries) if entry[0] == who and entry[1] in seqs]
        if at and at != list(range(at[0], at[0] + len(at))):
            between = [entries[i] for i in range(at[0], at[-1] + 1) if i not in at]
            problems.append(f"{who}: other operations ran inside its critical section: {between}")
    unknown = sorted({sender for sender, _ in entries} - set(sent))
    if unknown:
        problems.append(f"entries from unknown senders {unknown}")
    return problems
