"""Which open streams a change concerns (by task hub, work kind and name), and waking only those that must look.

A change marks the kinds it touched as stale on each stream that could take its work; a stream takes a kind out
of its stale set before it fetches that kind. So a change that lands while a stream looks is either seen by that
look or leaves the kind stale with a wake-up pending.

Streams that could take the work are woken, except that among idle streams for which every item the change can
have made is the same (filters that take every version of each of its names, no extended sessions), one is
woken and holds a *baton* for the kind: what it finds tells for all of them. Found nothing, or all there was:
the others would find nothing either. Found some and had no room for the rest: it hands the baton to another
of them (so does a stream that ends, or has no room left, before it fetches). Streams that are not waiting
are always woken (they may be about to wait), and so are the others (a version filter, a session holder).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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
        """Forgets an ended stream; a baton it still held goes to another stream."""
        with self._lock:
            for index, key in self._places(state):
                slot = index.get(key)
                if slot is not None and slot.pop(state.id, None) is not None and not slot:
                    del index[key]
        for kind in list(state.batons):
            self.hand_on_unused(state, kind)

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
            alike: dict[str, list[StreamState]] = {}  # per kind: idle streams for which its items are all alike
            for state, touched in self._concerned(hub, kinds, names).values():
                state.stale |= touched
                # A stream with no room for this work is woken by its next freed slot instead.
                roomy = [kind for kind in touched if state.has_room(kind)]
                if not roomy or state.stalled:
                    continue
                if kinds is not None and _idle(state) and all(_alike(state, kind, names) for kind in roomy):
                    for kind in roomy:
                        alike.setdefault(kind, []).append(state)
                elif self._pending(state):
                    woken.append(state)
            for kind, idle in alike.items():
                self._hand(kind, None if names is None else names.get(kind), idle, woken)
        self._set(woken)

    def _hand(self, kind: str, names: frozenset[str] | None, idle: list[StreamState], woken: list[StreamState]) -> None:
        """Gives the baton for ``kind`` to one of ``idle``: one already woken, else the longest idle (lock held)."""
        chosen = next((s for s in idle if s.wake_pending), None) or min(idle, key=lambda s: s.idle_since)
        chosen.batons[kind] = names
        if self._pending(chosen):
            woken.append(chosen)

    def hand_on(self, state: StreamState, kind: str, names: frozenset[str] | None) -> None:
        """``state`` held the baton for ``kind`` and leaves work of it behind: another idle stream alike looks."""
        woken: list[StreamState] = []
        with self._lock:
            concerned = self._concerned(state.hub, (kind,), None if names is None else {kind: names})
            idle = [
                other
                for other, _ in concerned.values()
                if other is not state
                and not other.stalled
                and other.has_room(kind)
                and _idle(other)
                and _alike(other, kind, None if names is None else {kind: names})
            ]
            for other in idle:
                other.stale.add(kind)
            if idle:
                self._hand(kind, names, idle, woken)
        self._set(woken)

    def hand_on_unused(self, state: StreamState, kind: str) -> None:
        """Hands on a baton the stream holds for ``kind`` but cannot use (no room, or it is ending)."""
        if kind not in state.batons:
            return
        with self._lock:
            held = kind in state.batons
            names = state.batons.pop(kind, None)
        if held:
            self.hand_on(state, kind, names)

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

    def take_stale(self, state: StreamState, kind: str) -> tuple[bool, Baton | None]:
        """Whether the stream should fetch ``kind`` (the kind is then no longer stale), and the baton it held."""
        with self._lock:
            if kind not in state.stale:
                return False, None
            state.stale.discard(kind)
            if kind not in state.batons:
                return True, None
            return True, Baton(state.batons.pop(kind))

    def mark_stale(self, state: StreamState, kinds: Iterable[str]) -> None:
        """Kinds the stream must look at again (more work was left, or time may have made some due)."""
        with self._lock:
            state.stale.update(kinds)


@dataclass(frozen=True)
class Baton:
    """Held by the one stream woken for a kind on behalf of idle streams alike: the names of the change's work."""

    names: frozenset[str] | None


def _idle(state: StreamState) -> bool:
    """Waiting for a change with none pending (a stream about to wait is not yet: it is woken like a busy one)."""
    return state.waiting and not state.wake_pending


def _alike(state: StreamState, kind: str, names: Mapping[str, frozenset[str]] | None) -> bool:
    """Whether the stream takes every item of ``kind`` the change can have made, as any other such stream would."""
    if state.keeps_sessions:
        return False  # instances it holds are its alone
    accepted = state.filters[kind].versions_by_name
    if accepted is None:
        return True
    made = None if names is None else names.get(kind)
    return made is not None and all(accepted.get(name) == frozenset() for name in made)


def _set_all(woken: list[StreamState]) -> None:
    # In the order they went idle, which is the order they resume and look in: a stream that waited long looks
    # before one that just sent work and went idle again, so a worker that hands work back at once (rejecting
    # a version it does not run) cannot win every race for that work.
    for state in sorted(woken, key=lambda s: s.idle_since):
        state.wakeup.set()
