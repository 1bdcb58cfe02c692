"""What a leased work item is: the orchestration and activity work types, session marks, and the Interleaver
seam at the points where work items meet other concurrent work."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

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


T = TypeVar("T")

# The points an Interleaver is asked about, each with the key of the work it concerns (an instance ID, an
# entity ID, or "instance/taskId" for an activity) and, for choices, what may happen there (the first
# option is what happens without an interleaver).
#: A leased work item about to be written on its stream: it may go out with its lease already ended, or its
#: stream may be dropped instead (the worker reconnects; what the stream held is offered again).
SEND = "send"
SEND_CHOICES = ("send", "expire", "drop")
#: A completion about to be applied: its lease may end first, or the worker may send it twice.
COMPLETE = "complete"
COMPLETE_CHOICES = ("apply", "expire", "repeat")
#: A client request that changes an instance or entity (event, signal, terminate, suspend, resume, rewind).
ARRIVE = "arrive"
#: A stream woken by time (a timer or a lease came due) about to look for work.
DUE = "due"
#: Work items leased together for one stream, about to be queued for sending.
BATCH = "batch"


class Interleaver(Protocol):
    """Perturbs the order in which concurrent work meets, to make races show in tests.

    Every call comes from the server's event loop; ``pause`` is where other handlers get to run.
    """

    async def pause(self, point: str, key: str) -> None:
        """Returns when other work has had its chance at ``point`` (at once, or after a delay)."""
        ...

    def choose(self, point: str, key: str, options: Sequence[str]) -> str:
        """One of ``options``: what happens to the work at ``point``."""
        ...

    def shuffle(self, point: str, items: list[T]) -> list[T]:
        """``items`` in the order they are to be handled."""
        ...

    def committed(self, kind: str, token: str) -> None:
        """A completion with ``token`` was accepted (each token may be accepted once)."""
        ...
