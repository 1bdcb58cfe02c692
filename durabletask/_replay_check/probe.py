"""Watching one replay closely: every handler of an executor's table is wrapped to note the first failure, with the
recorded event being applied and the call the current code made under that event's sequence ID."""

from __future__ import annotations

from dataclasses import dataclass

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.actions import PendingAction
from durabletask._replay.handlers import Handler, HandlerTable
from durabletask._replay.runtime import RuntimeContext

#: Event kinds that record a durable call under its sequence ID; replay matches the current call against them.
SCHEDULING_KINDS = frozenset(
    {
        "taskScheduled",
        "subOrchestrationInstanceCreated",
        "timerCreated",
        "eventSent",
        "entityOperationCalled",
        "entityOperationSignaled",
        "entityLockRequested",
        "entityUnlockSent",
    }
)


@dataclass(frozen=True)
class Failure:
    """The first error a replay raised: the event being applied then, and the current call at its sequence ID."""

    kind: str
    event: pb.HistoryEvent
    action: PendingAction | None
    error: Exception
    name: str
    version: str | None


class Probe:
    """Installs itself in a handler table; after the replay, :attr:`failure` holds what went wrong first."""

    def __init__(self) -> None:
        self.failure: Failure | None = None

    def install(self, table: HandlerTable) -> None:
        for kind, handler in list(table.table.items()):
            table.register(kind, self._wrap(kind, handler))

    def _wrap(self, kind: str, handler: Handler) -> Handler:
        scheduling = kind in SCHEDULING_KINDS

        def probed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
            # Looked at before the handler runs: a confirmed call is removed from the pending ones.
            action = _current_call(rt, event.eventId) if scheduling else None
            try:
                handler(rt, event)
            except Exception as error:
                if self.failure is None:  # an outer handler (executionResumed) sees an inner one's error again
                    self.failure = Failure(kind, event, action, error, rt.name, rt.version)
                raise

        return probed


def _current_call(rt: RuntimeContext, sequence_id: int) -> PendingAction | None:
    return rt.pending.get(sequence_id) or rt.sent.get(sequence_id)
