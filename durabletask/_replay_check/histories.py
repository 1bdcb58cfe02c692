"""The histories a check replays: one instance's recorded events, split into its executions (continue-as-new
generations), each replayed on its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from durabletask import history as h
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay_check.events import history_event_to_pb


@dataclass(frozen=True)
class OrchestrationHistory:
    """One orchestration instance's recorded history, as a client, an export file or a JSON dump gives it.

    Attributes:
        instance_id: The instance the events belong to.
        events: Its history events, oldest first (``durabletask.history`` classes). Several executions, one
            after the other, are checked one by one.
        source: Where the history came from, shown in reports (an endpoint, a file path).
    """

    instance_id: str
    events: Sequence[h.HistoryEvent]
    source: str = ""


@dataclass(frozen=True)
class Execution:
    """One execution's protocol events and what its ``executionStarted`` event says about it."""

    instance_id: str
    index: int
    events: list[pb.HistoryEvent]
    source: str
    name: str = ""
    version: str | None = None
    execution_id: str | None = None
    parent_instance_id: str | None = None

    @property
    def started(self) -> bool:
        return bool(self.name)

    def ending(self) -> pb.ExecutionCompletedEvent | None:
        """How the history says this execution ended (``None`` while it runs)."""
        for event in reversed(self.events):
            if event.HasField("executionCompleted"):
                return event.executionCompleted
        return None


def split_executions(events: Sequence[pb.HistoryEvent]) -> list[list[pb.HistoryEvent]]:
    """The events of each execution: a new one begins with each ``executionStarted`` after the first, together with
    the ``orchestratorStarted`` event that opened its first turn."""
    runs: list[list[pb.HistoryEvent]] = [[]]
    started = False
    for event in events:
        if event.HasField("executionStarted"):
            if started:
                current = runs[-1]
                opening = [current.pop()] if current and current[-1].HasField("orchestratorStarted") else []
                runs.append(opening)
            started = True
        runs[-1].append(event)
    return [run for run in runs if run]


def _described(instance_id: str, index: int, events: list[pb.HistoryEvent], source: str) -> Execution:
    for event in events:
        if event.HasField("executionStarted"):
            started = event.executionStarted
            instance = started.orchestrationInstance
            parent = (
                started.parentInstance.orchestrationInstance.instanceId if started.HasField("parentInstance") else ""
            )
            return Execution(
                instance_id,
                index,
                events,
                source,
                name=started.name,
                version=started.version.value if started.HasField("version") else None,
                execution_id=instance.executionId.value if instance.HasField("executionId") else None,
                parent_instance_id=parent or None,
            )
    return Execution(instance_id, index, events, source)


def executions(history: OrchestrationHistory) -> list[Execution]:
    """The executions of ``history``, oldest first, as protocol events."""
    events = [history_event_to_pb(event) for event in history.events]
    runs = split_executions(events)
    return [_described(history.instance_id, i, run, history.source) for i, run in enumerate(runs)]
