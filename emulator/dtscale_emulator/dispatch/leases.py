"""The books of outstanding leases: live ones by completion token, orphans of vanished streams, and the tokens."""

from __future__ import annotations

import secrets
import threading

from dtscale_emulator.dispatch.streams import Lease, StreamState
from dtscale_emulator.dispatch.wake import MAX_ORPHANS
from dtscale_emulator.errors import stale_token

#: Random bytes in a completion token (128 bits: not to be guessed).
TOKEN_BYTES = 16


class LeaseBook:
    """Who holds which work item, under which token; every method is safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Leases of connected streams, by token.
        self.live: dict[str, Lease] = {}
        # Leases of vanished streams, oldest first: their completions count until the work is leased again.
        self._orphans: dict[str, Lease] = {}
        self._by_key: dict[tuple[str, str, str | int], str] = {}

    @staticmethod
    def tokens(count: int) -> list[str]:
        """``count`` fresh completion tokens of TOKEN_BYTES random bytes each, in hex.

        A token is all a completion needs to show, so none may be derived from another: a serial number would
        let any caller of the task hub complete or abandon another worker's work item by guessing.
        """
        raw = secrets.token_bytes(TOKEN_BYTES * count)
        return [raw[i : i + TOKEN_BYTES].hex() for i in range(0, len(raw), TOKEN_BYTES)]

    def find(self, token: str) -> Lease | None:
        """The lease (live or orphaned) a token names, if any."""
        with self._lock:
            return self.live.get(token) or self._orphans.get(token)

    def live_tokens(self) -> list[str]:
        """The tokens of every lease a connected stream holds, now."""
        with self._lock:
            return list(self.live)

    def count_held(self, tokens: list[str]) -> int:
        """How many of ``tokens`` still name a lease (live or orphaned)."""
        with self._lock:
            return sum(1 for token in tokens if token in self.live or token in self._orphans)

    def take(self, hub: str, token: str, kind: str) -> Lease:
        """The lease a completion or abandon names.

        Raises:
            FailedPreconditionError: no such lease of that kind in that task hub.
        """
        lease = self.find(token)
        if lease is None or lease.kind != kind or lease.hub != hub:
            raise stale_token(token)
        return lease

    def track(self, lease: Lease) -> StreamState | None:
        """Records a new lease; returns the stream of the lease it replaced if that freed a slot it lacked."""
        freed = None
        with self._lock:
            previous = self._by_key.get((lease.hub, lease.kind, lease.key))
            if previous is not None:
                # An expired lease was redelivered; the old holder's token is now stale.
                old = self.live.get(previous)
                if old is not None and not old.stream.has_room(old.kind):
                    freed = old.stream
                self._forget(previous)
            self.live[lease.token] = lease
            self._by_key[(lease.hub, lease.kind, lease.key)] = lease.token
            lease.stream.in_flight[lease.kind] += 1
        return freed

    def end(self, lease: Lease) -> bool:
        """Drops a lease that was completed or handed back; whether that freed a slot its full stream lacked."""
        with self._lock:
            full = not lease.stream.has_room(lease.kind)
            return self._forget(lease.token) is not None and full

    def orphan_all(self, state: StreamState) -> list[Lease]:
        """Moves every live lease of a stream to the orphans and returns them."""
        with self._lock:
            held = [token for token, lease in self.live.items() if lease.stream is state]
            return [lease for token in held if (lease := self._orphan(token)) is not None]

    def adopt(self, leases: list[Lease]) -> None:
        """Records leases of streams that are already gone (the previous process's, after a restart) as orphans.

        Their completions count until their work items are leased again; none holds a slot of a stream here.
        """
        with self._lock:
            for lease in leases:
                key = (lease.hub, lease.kind, lease.key)
                previous = self._by_key.get(key)
                if previous is not None:
                    self._forget(previous)
                self._by_key[key] = lease.token
                self._keep_orphan(lease)

    def forget_all(self) -> None:
        with self._lock:
            for token in [*self.live, *self._orphans]:
                self._forget(token)

    def forget_hub(self, hub: str) -> None:
        with self._lock:
            held = [*self.live.items(), *self._orphans.items()]
            for token in [t for t, lease in held if lease.hub == hub]:
                self._forget(token)

    def _forget(self, token: str) -> Lease | None:
        """Drops a lease (live or orphaned) from the books (caller holds the lock)."""
        lease = self.live.pop(token, None)
        if lease is not None:
            lease.stream.in_flight[lease.kind] -= 1
        else:
            lease = self._orphans.pop(token, None)
        if lease is not None and self._by_key.get((lease.hub, lease.kind, lease.key)) == token:
            del self._by_key[(lease.hub, lease.kind, lease.key)]
        return lease

    def _orphan(self, token: str) -> Lease | None:
        """Moves a dropped stream's lease to the orphans (caller holds the lock)."""
        lease = self.live.pop(token, None)
        if lease is None:
            return None
        lease.stream.in_flight[lease.kind] -= 1
        self._keep_orphan(lease)
        return lease

    def _keep_orphan(self, lease: Lease) -> None:
        """Adds an orphan, forgetting the oldest beyond MAX_ORPHANS (caller holds the lock)."""
        self._orphans[lease.token] = lease
        if len(self._orphans) > MAX_ORPHANS:
            self._forget(next(iter(self._orphans)))
