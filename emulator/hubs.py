"""The set of task hubs a server serves, and how a request's ``taskhub`` metadata selects one."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from emulator.errors import NotFoundError
from emulator.storage import Backend

DEFAULT_HUB = "default"


class TaskHubs:
    """Known task hubs, persisted in storage; with ``dynamic`` set, unknown hubs are created on first use."""

    def __init__(self, backend: Backend, initial: Iterable[str], dynamic: bool) -> None:
        self._backend = backend
        self.dynamic = dynamic
        self._lock = threading.Lock()
        self._known: set[str] = set()
        for name in initial:
            self.create(name)

    @staticmethod
    def name_in(metadata: Iterable[tuple[str, str | bytes]]) -> str:
        """The hub named by the request's ``taskhub`` metadata, ``default`` when absent."""
        for key, value in metadata:
            if key.lower() == "taskhub" and value:
                return value.decode() if isinstance(value, bytes) else value
        return DEFAULT_HUB

    def resolve(self, metadata: Iterable[tuple[str, str | bytes]]) -> str:
        """The existing hub named by the request metadata; NOT_FOUND if unknown (unless hubs are dynamic)."""
        return self.require(self.name_in(metadata))

    def require(self, name: str) -> str:
        with self._lock:
            if name in self._known:
                return name
        with self._backend.transaction() as tx:
            exists = tx.hub_exists(name)
        if exists or self.dynamic:
            self.create(name)
            return name
        raise NotFoundError(f"Task hub not found: {name}")

    def create(self, name: str) -> None:
        with self._backend.transaction() as tx:
            tx.ensure_hub(name)
        with self._lock:
            self._known.add(name)

    def delete(self, name: str) -> None:
        with self._backend.transaction() as tx:
            tx.delete_hub(name)
        with self._lock:
            self._known.discard(name)
