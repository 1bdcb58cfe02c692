"""The histories a check replays: one instance's recorded events, split into its executions (continue-as-new
generations), each replayed on its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from durabletask import history as h
from durabletask._grpc.convert import history_event_from_pb
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay_check.events import history_event_to_pb


class OrchestrationHistory:
    """One orchestration instance's recorded history, as a client, an export file or a JSON dump gives it.

    Args:
        instance_id: The instance the events belong to.
        events: Its history events, oldest first (``durabletask.history`` classes, as
            ``TaskHubGrpcClient.get_orchestration_history`` returns them). Several executions, one after the
            other, are checked one by one.
        source: Where the history came from, shown in reports (an endpoint, a file path).
    """

    __slots__ = ("_events", "_protocol", "instance_id", "source")

    def __init__(self, instance_id: str, events: Sequence[h.HistoryEvent], source: str = "") -> None:
        self.instance_id = instance_id
        self.source = source
        self._events: Sequence[h.HistoryEvent] | None = events
        self._protocol: list[pb.HistoryEvent] | None = None

    @classmethod
    def of_protocol_events(cls, instance_id: str, events: list[pb.HistoryEvent], source: str) -> OrchestrationHistory:
        """A history read straight into protocol events (from files): the checker's own form of it.

        Args:
            instance_id: The instance the history belongs to.
            events: Its protocol events, oldest first.
            source: Where the history came from (a file path), shown in reports.
        """
        made = cls(instance_id, (), source)
        made._events, made._protocol = None, events
        return made

    @property
    def events(self) -> Sequence[h.HistoryEvent]:
        """The history events, oldest first."""
        if self._events is None:
            self._events = [history_event_from_pb(e) for e in self.protocol_events()]
        return self._events

    def protocol_events(self) -> list[pb.HistoryEvent]:
        """The events as the executor reads them (converted once)."""
        if self._protocol is None:
            self._protocol = [history_event_to_pb(e) for e in self.events]
        return self._protocol

    def __repr__(self) -> str:
        return f"OrchestrationHistory({self.instance_id!r}, {len(self.protocol_events())} events, {self.source!r})"


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
    runs = split_executions(history.protocol_events())
    return [_described(history.instance_id, i, run, history.source) for i, run in enumerate(runs)]
