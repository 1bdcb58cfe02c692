"""What a leased work item is: the orchestration and activity work types, and session marks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dtscale_emulator.protocol import pb


@dataclass(frozen=True)
class SessionMark:
    """What a worker's live session of an instance has seen: valid only while the stored history matches."""

    execution_id: str
    history_length: int


class Affinity(Protocol):
    """The session view of the stream fetching work: which instances it must leave, which it holds."""

    def held_elsewhere(self, hub: str, instance_id: str) -> bool: ...

    def mark(self, hub: str, instance_id: str) -> SessionMark | None:
        """What this stream's session of the instance has seen (``None``: it holds none), left in place."""
        ...

    def take(self, hub: str, instance_id: str) -> None:
        """Spends this stream's mark of the instance: its next work item has been leased."""
        ...


@dataclass(frozen=True)
class OrchestrationWork:
    instance_id: str
    message_ids: list[int]
    request: pb.OrchestratorRequest
    history_length: int = 0
    # False when the request left the past events out (continuation or streamed history).
    has_past: bool = True


@dataclass(frozen=True)
class ActivityWork:
    activity_id: int
    request: pb.ActivityRequest
