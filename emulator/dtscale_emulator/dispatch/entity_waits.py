"""Held entity reads: a GetEntity that asks to wait until the entity's state moves past the version it names.

A caller (the SDK's stream subscriber) sends the request metadata of
:data:`~dtscale_emulator.protocol.extensions.ENTITY_WAIT_MS` and
:data:`~dtscale_emulator.protocol.extensions.ENTITY_VERSION`; the answer then comes once the entity's state
differs from that version, the named orchestration instance ends, the wait elapses, or the call's deadline
nears, whichever is first, and it carries the state's version in its trailing metadata. A backend that does
not know the keys ignores them and answers at once without the version, which tells the caller to poll.

Waiting costs a coroutine and an event on the server's loop, never a thread; past :data:`MAX_WAITERS` held
reads at once, more are answered at once as if the keys were unknown, so callers fall back to polling.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dtscale_emulator.engine.events import TERMINAL_STATUSES
from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.protocol.extensions import ENTITY_VERSION, ENTITY_WAIT_INSTANCE, ENTITY_WAIT_MS

#: The longest a read is held, whatever the caller asks: a caller that went away unnoticed costs this at most.
MAX_HOLD_SECONDS = 30.0
#: Held reads at once, across all hubs; more are answered at once, unheld.
MAX_WAITERS = 10_000
#: Answered this long before the caller's deadline, so that the caller gets the state rather than an error.
DEADLINE_MARGIN = 0.25
_MAX_WAIT_TEXT = 12  # digits of a wait in milliseconds
_MAX_VERSION_TEXT = 64
_MAX_INSTANCE_TEXT = 1024

Metadata = Iterable[tuple[str, str | bytes]]


@dataclass(frozen=True, slots=True)
class Hint:
    """What a GetEntity call asked for: hold for ``seconds`` while the state's version is ``seen``."""

    seconds: float
    seen: str | None
    instance_id: str | None


def version_of(state: str | None) -> str:
    """A short fingerprint of an entity's serialized state (``"none"`` for an entity without state)."""
    if state is None:
        return "none"
    return hashlib.blake2b(state.encode("utf-8"), digest_size=12).hexdigest()


def _value(metadata: Metadata, key: str, limit: int) -> str | None:
    found = [value for name, value in metadata if name == key]
    if not found:
        return None
    value = found[-1]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if len(text) > limit:
        raise InvalidArgumentError(f"the metadata '{key}' is {len(text)} characters long, over the limit of {limit}")
    return text


def parse_hint(given: Metadata) -> Hint | None:
    """The held-read hint of a call's metadata (``None``: the call did not ask for one).

    Raises:
        InvalidArgumentError: a key holds a malformed value (a wait that is not milliseconds >= 0, or an
            over-long version or instance ID). A wait longer than :data:`MAX_HOLD_SECONDS` is shortened to it.
    """
    metadata = list(given)
    wait = _value(metadata, ENTITY_WAIT_MS, _MAX_WAIT_TEXT)
    if wait is None:
        return None
    if not wait.isascii() or not wait.isdigit():
        raise InvalidArgumentError(
            f"the metadata '{ENTITY_WAIT_MS}' must be a whole number of milliseconds >= 0, got {wait[:40]!r}"
        )
    seconds = min(int(wait) / 1000, MAX_HOLD_SECONDS)
    seen = _value(metadata, ENTITY_VERSION, _MAX_VERSION_TEXT)
    instance_id = _value(metadata, ENTITY_WAIT_INSTANCE, _MAX_INSTANCE_TEXT)
    return Hint(seconds, seen or None, instance_id or None)


class EntityWaits:
    """Held entity reads, woken by changes to their entity's state or to the instance they name.

    Args:
        closing: Whether the emulator is stopping (held reads are then answered at once).
    """

    def __init__(self, closing: Callable[[], bool]) -> None:
        self._closing = closing
        self._lock = threading.Lock()
        self._by_entity: dict[tuple[str, str], set[asyncio.Event]] = {}
        self._by_instance: dict[tuple[str, str], set[asyncio.Event]] = {}
        self._count = 0
        self._per_hub: dict[str, int] = {}

    def __len__(self) -> int:
        """How many reads are held now."""
        with self._lock:
            return self._count

    def held_in(self, hub: str) -> int:
        """How many reads of ``hub``'s entities are held now."""
        with self._lock:
            return self._per_hub.get(hub, 0)

    def entity_changed(self, hub: str, entity_id: str) -> None:
        """The state of an entity was committed (from any thread; never blocks)."""
        with self._lock:
            events = list(self._by_entity.get((hub, entity_id), ()))
        for event in events:
            aio_loop.call_soon(event.set)

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        """An instance changed: reads held on its end wake if it ended or may have (``status`` ``None``).

        With ``None`` for the instance (any instance of ``hub``, or of every hub), all held reads there wake.
        """
        with self._lock:
            if hub is not None and instance_id is not None:
                if status is not None and status not in TERMINAL_STATUSES:
                    return
                events = list(self._by_instance.get((hub, instance_id), ()))
            else:
                events = [e for (h, _), found in self._by_entity.items() if hub in (None, h) for e in found]
        for event in events:
            aio_loop.call_soon(event.set)

    def _watch(self, hub: str, entity_id: str, instance_id: str | None) -> asyncio.Event | None:
        event = asyncio.Event()
        with self._lock:
            if self._count >= MAX_WAITERS:
                return None
            self._count += 1
            self._per_hub[hub] = self._per_hub.get(hub, 0) + 1
            self._by_entity.setdefault((hub, entity_id), set()).add(event)
            if instance_id is not None:
                self._by_instance.setdefault((hub, instance_id), set()).add(event)
        return event

    def _unwatch(self, hub: str, entity_id: str, instance_id: str | None, event: asyncio.Event) -> None:
        with self._lock:
            self._count -= 1
            self._per_hub[hub] -= 1
            if not self._per_hub[hub]:
                del self._per_hub[hub]
            for table, key in ((self._by_entity, (hub, entity_id)), (self._by_instance, (hub, instance_id or ""))):
                found = table.get(key)
                if found is not None:
                    found.discard(event)
                    if not found:
                        del table[key]

    async def hold(
        self,
        hub: str,
        entity_id: str,
        hint: Hint,
        read: Callable[[], str | None],
        ended: Callable[[str], bool],
        time_remaining: float | None,
    ) -> bool:
        """Waits as ``hint`` asks; whether the read was held (``False``: too many held reads, answer unheld).

        ``read`` returns the entity's serialized state now (the caller reads it again to answer), and
        ``ended(instance_id)`` whether an instance has ended or does not exist. A cancelled call (its caller
        went away) cancels this coroutine, which ends the wait at once.
        """
        if hint.seen is None or hint.seconds <= 0:
            return True  # nothing to wait for: the caller learns the version
        seconds = hint.seconds
        if time_remaining is not None:
            seconds = min(seconds, time_remaining - DEADLINE_MARGIN)
        event = self._watch(hub, entity_id, hint.instance_id)
        if event is None:
            return False
        try:
            # Watching before these reads: a change made after them has set the event already.
            unchanged = version_of(read()) == hint.seen
            over = hint.instance_id is not None and ended(hint.instance_id)
            if unchanged and not over and not self._closing() and seconds > 0:
                await aio_loop.wait(event, seconds)
        finally:
            self._unwatch(hub, entity_id, hint.instance_id, event)
        return True
