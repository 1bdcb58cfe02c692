"""Which open streams a change concerns (by task hub, work kind and name), and waking only those.

A change marks the kinds it touched as stale on each stream that could take its work, and wakes those of
them with room for it; a stream takes a kind out of its stale set before it fetches that kind. So a change
that lands while a stream looks either is seen by that look or leaves the kind stale with a wake-up pending.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dtscale_emulator.dispatch.streams import StreamState
from dtscale_emulator.engine.changes import KINDS
from dtscale_emulator.ops import aio_loop

_Streams = dict[int, StreamState]


class StreamWakeups:
    """Open streams indexed by task hub, by kind, and by the names their filters take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_hub: dict[str | None, _Streams] = {}
        self._every_name: dict[tuple[str, str], _Streams] = {}  # (hub, kind): filters take every name
        self._by_name: dict[tuple[str, str, str], _Streams] = {}  # (hub, kind, name): filters list the name
        #: Wake-ups handed to streams, by changes and by freed slots (observability: a change should wake
        #: only the streams that can take the work it made).
        self.count = 0

    def _places(self, state: StreamState) -> list[tuple[dict[Any, _Streams], Any]]:
        """Where the stream is indexed: (index, key) pairs."""
        places: list[tuple[dict[Any, _Streams], Any]] = [(self._by_hub, state.hub)]
        for kind in KINDS:
            names = state.filters[kind].versions_by_name
            if names is None:
                places.append((self._every_name, (state.hub, kind)))
            else:
                places.extend((self._by_name, (state.hub, kind, name)) for name in names)
        return places

    def add(self, state: StreamState) -> None:
        with self._lock:
            for index, key in self._places(state):
                index.setdefault(key, {})[state.id] = state

    def remove(self, state: StreamState) -> None:
        with self._lock:
            for index, key in self._places(state):
                slot = index.get(key)
                if slot is not None and slot.pop(state.id, None) is not None and not slot:
                    del index[key]

    def _concerned(
        self, hub: str | None, kinds: Sequence[str] | None, names: Mapping[str, frozenset[str]] | None
    ) -> dict[int, tuple[StreamState, set[str]]]:
        """Streams a change concerns, each with the kinds it touched for that stream (caller holds the lock)."""
        if hub is None or kinds is None:
            every = (s for slot in self._by_hub.values() for s in slot.values()) if hub is None else None
            found = every if every is not None else self._by_hub.get(hub, {}).values()
            return {s.id: (s, set(KINDS if kinds is None else kinds)) for s in found}
        concerned: dict[int, tuple[StreamState, set[str]]] = {}
        for kind in kinds:
            made = None if names is None else names.get(kind)
            if made is None:
                # Unknown names: every stream whose filters take anything of that kind.
                slots = [self._every_name.get((hub, kind), {})]
                slots += [slot for (h, k, _), slot in self._by_name.items() if h == hub and k == kind]
            elif made:
                slots = [self._every_name.get((hub, kind), {})]
                slots += [self._by_name.get((hub, kind, name), {}) for name in made]
            else:
                continue  # the change made no work of this kind after all
            for slot in slots:
                for state in slot.values():
                    concerned.setdefault(state.id, (state, set()))[1].add(kind)
        return concerned

    def changed(self, hub: str | None, kinds: Sequence[str] | None, names: Mapping[str, frozenset[str]] | None) -> None:
        """Work of ``kinds`` (``None``: any) and ``names`` may have appeared in ``hub`` (``None``: any hub)."""
        woken: list[StreamState] = []
        with self._lock:
            for state, touched in self._concerned(hub, kinds, names).values():
                state.stale |= touched
                # A stream with no room for this work is woken by its next freed slot instead.
                if any(state.has_room(kind) for kind in touched) and self._pending(state):
                    woken.append(state)
        self._set(woken)

    def wake(self, state: StreamState) -> None:
        """Wakes one stream (a slot it lacked was freed)."""
        with self._lock:
            woken = [state] if self._pending(state) else []
        self._set(woken)

    def _pending(self, state: StreamState) -> bool:
        """Marks a wake-up pending; False if one already was, or the stream is ending (caller holds the lock)."""
        if state.wake_pending or state.stalled:
            return False
        state.wake_pending = True
        self.count += 1
        return True

    @staticmethod
    def _set(woken: list[StreamState]) -> None:
        if woken:
            aio_loop.call_soon(lambda: _set_all(woken))

    def looking(self, state: StreamState) -> None:
        """The stream starts a look: wake-ups from now on are for what this look may miss."""
        with self._lock:
            state.wake_pending = False
            state.wakeup.clear()

    def take_stale(self, state: StreamState, kind: str) -> bool:
        """Whether the stream should fetch ``kind``; if so the kind is no longer stale (before the fetch)."""
        with self._lock:
            if kind not in state.stale:
                return False
            state.stale.discard(kind)
            return True

    def mark_stale(self, state: StreamState, kinds: Iterable[str]) -> None:
        """Kinds the stream must look at again (more work was left, or time may have made some due)."""
        with self._lock:
            state.stale.update(kinds)


def _set_all(woken: list[StreamState]) -> None:
    # In the order they went idle, which is the order they resume and look in: a stream that waited long looks
    # before one that just sent work and went idle again, so a worker that hands work back at once (rejecting
    # a version it does not run) cannot win every race for that work.
    for state in sorted(woken, key=lambda s: s.idle_since):
        state.wakeup.set()
