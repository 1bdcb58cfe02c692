"""What the engine reports after each committed change, and to whom: the ``ChangeSubscriber`` seam."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

#: The kinds of work a change can make available to GetWorkItems streams.
KINDS = ("orchestration", "activity", "entity")


class ChangeSubscriber(Protocol):
    """Told about every committed change; the dispatcher uses it to wake streams and waiters.

    Called after the transaction commits, from whichever thread made the change; must not block.
    """

    def work_changed(
        self,
        hub: str,
        kinds: tuple[str, ...] | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """Work in ``hub`` may have changed.

        Args:
            kinds: The only kinds of work that can have become available; ``None`` when any work can
                have, including timed work (a timer or a lease expiry moved), or a lease ended.
            names: By kind, the names of the work the change made, when known: streams whose filters
                take none of them need not look.
        """
        ...

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        """An instance's status may have changed (``instance_id`` ``None``: any instance of ``hub``, or of all hubs).

        Args:
            status: The status just committed, when known.
        """
        ...


class ChangeFeed:
    """Passes every change on to the subscribers added so far.

    Lets the engine be built before the dispatcher that listens to it (the dispatcher needs the engine).
    """

    def __init__(self) -> None:
        self._subscribers: tuple[ChangeSubscriber, ...] = ()

    def subscribe(self, subscriber: ChangeSubscriber) -> None:
        self._subscribers = (*self._subscribers, subscriber)

    def work_changed(
        self,
        hub: str,
        kinds: tuple[str, ...] | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        for subscriber in self._subscribers:
            subscriber.work_changed(hub, kinds, names)

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        for subscriber in self._subscribers:
            subscriber.instance_changed(hub, instance_id, status)
