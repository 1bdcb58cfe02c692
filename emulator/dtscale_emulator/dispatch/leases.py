"""The books of outstanding leases: live ones by completion token, orphans of vanished streams, and the tokens."""

from __future__ import annotations

import itertools
import threading
import uuid

from dtscale_emulator.dispatch.streams import Lease, StreamState
from dtscale_emulator.dispatch.wake import MAX_ORPHANS
from dtscale_emulator.errors import stale_token


class LeaseBook:
    """Who holds which work item, under which token; every method is safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Leases of connected streams, by token.
        self.live: dict[str, Lease] = {}
        # Leases of vanished streams, oldest first: their completions count until the work is leased again.
        self._orphans: dict[str, Lease] = {}
        self._by_key: dict[tuple[str, str, str | int], str] = {}
        # Completion tokens: unique per lease and never reused by another emulator process (a random
        # prefix), without a fresh UUID for each of the up to FETCH_BATCH tokens a fetch prepares.
        self._token_prefix = uuid.uuid4().hex[:16]
        self._token_serial = itertools.count(1)

    def tokens(self, count: int) -> list[str]:
        """``count`` fresh tokens, all from one serial number (most fetches lease one or none)."""
        prefix = f"{self._token_prefix}{next(self._token_serial):012x}"
        return [f"{prefix}{i:04x}" for i in range(count)]

    def find(self, token: str) -> Lease | None:
        """The lease (live or orphaned) a token names, if any."""
        with self._lock:
            return self.live.get(token) or self._orphans.get(token)

    def take(self, hub: str, token: str, kind: str) -> Lease:
        """The lease a completion or abandon names.

        Raises:
            FailedPreconditionError: no such lease of that kind in that task hub.
        """
        lease = self.find(token)
        if lease is None or lease.kind != kind or lease.hub != hub:
            raise stale_token(token)
        return lease

    def track(self, lease: Lease) -> None:
        with self._lock:
            previous = self._by_key.get((lease.hub, lease.kind, lease.key))
            if previous is not None:
                # An expired lease was redelivered; the old holder's token is now stale.
                self._forget(previous)
            self.live[lease.token] = lease
            self._by_key[(lease.hub, lease.kind, lease.key)] = lease.token
            lease.stream.in_flight[lease.kind] += 1

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
        self._orphans[token] = lease
        if len(self._orphans) > MAX_ORPHANS:
            self._forget(next(iter(self._orphans)))
        return lease
