"""The result types of applying an orchestrator's response: new history, instance changes and an outbox."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from dtscale_emulator.protocol import pb


@dataclass(frozen=True)
class InstanceView:
    """What the state machine needs to know about the instance being advanced."""

    instance_id: str
    execution_id: str
    name: str
    version: str | None
    status: int
    input: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None
    parent_task_id: int | None = None


@dataclass(frozen=True)
class ActivityTask:
    request: pb.ActivityRequest


@dataclass(frozen=True)
class TimerTask:
    fire_at: datetime
    event: pb.HistoryEvent


@dataclass(frozen=True)
class NewInstance:
    """A sub-orchestration to create; ``started`` is its executionStarted event (with ParentInstanceInfo)."""

    instance_id: str
    name: str
    version: str | None
    input: str | None
    tags: dict[str, str]
    started: pb.HistoryEvent
    parent_task_id: int


@dataclass(frozen=True)
class SendMessage:
    """An event delivered to another instance (raised events, sub-orchestration results)."""

    instance_id: str
    event: pb.HistoryEvent


@dataclass(frozen=True)
class Termination:
    instance_id: str
    reason: str | None
    recurse: bool


@dataclass(frozen=True)
class ContinueAsNew:
    execution_id: str
    version: str | None
    input: str | None
    started: pb.HistoryEvent
    carryover: list[pb.HistoryEvent]
    #: The executionSuspended the continuing turn ended suspended by, which the new execution starts with.
    suspended: pb.HistoryEvent | None = None


@dataclass
class Outbox:
    activities: list[ActivityTask] = field(default_factory=list)
    timers: list[TimerTask] = field(default_factory=list)
    instances: list[NewInstance] = field(default_factory=list)
    messages: list[SendMessage] = field(default_factory=list)
    terminations: list[Termination] = field(default_factory=list)
    entity_messages: list[pb.SendEntityMessageAction] = field(default_factory=list)


@dataclass
class Transition:
    """Everything one orchestrator completion changes, to be committed in one transaction."""

    history: list[pb.HistoryEvent]
    status: int
    custom_status: str | None
    output: str | None = None
    failure: pb.TaskFailureDetails | None = None
    continue_as_new: ContinueAsNew | None = None
    rewound_history: list[pb.HistoryEvent] | None = None
    outbox: Outbox = field(default_factory=Outbox)

    @property
    def terminal(self) -> bool:
        return self.status in (
            pb.ORCHESTRATION_STATUS_COMPLETED,
            pb.ORCHESTRATION_STATUS_FAILED,
            pb.ORCHESTRATION_STATUS_TERMINATED,
        )


@dataclass
class ActionContext:
    """Shared inputs of every action handler."""

    instance: InstanceView
    now: datetime
    new_id: Callable[[], str]
    transition: Transition


ActionHandler = Callable[[ActionContext, pb.OrchestratorAction], None]
