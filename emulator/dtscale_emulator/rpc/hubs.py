"""The set of task hubs a server serves, how a request's ``taskhub`` metadata selects one, and hub limits."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable

from dtscale_emulator.engine import queries
from dtscale_emulator.errors import InvalidArgumentError, NotFoundError, ResourceExhaustedError, UnavailableError
from dtscale_emulator.storage import Backend

DEFAULT_HUB = "default"
#: Longest task hub name accepted for a hub created at run time (dynamically or by CreateTaskHub).
MAX_HUB_NAME = 64
#: Most task hubs that may exist before one more is created at run time (hubs named at startup always exist).
MAX_HUBS = 100
#: Rows one transaction of a task hub deletion removes: the store serves other calls between chunks.
DELETE_CHUNK = 2000


class TaskHubs:
    """Known task hubs, persisted in storage; with ``dynamic`` set, unknown hubs are created on first use."""

    def __init__(self, backend: Backend, initial: Iterable[str], dynamic: bool) -> None:
        self._backend = backend
        self.dynamic = dynamic
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._deleting: set[str] = set()
        for name in initial:
            self._add(name)

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
            if name in self._deleting:
                raise UnavailableError(f"task hub '{name}' is being deleted; try again when the deletion has finished")
            if name in self._known:
                return name
        with self._backend.transaction() as tx:
            exists = tx.hub_exists(name)
        if exists:
            self._add(name)
            return name
        if self.dynamic:
            self.create(name)
            return name
        raise NotFoundError(f"Task hub not found: {name}")

    def create(self, name: str) -> None:
        """Creates a hub at run time, within the documented name and count limits."""
        check_name(name)
        with self._lock:
            if name in self._deleting:
                raise UnavailableError(f"task hub '{name}' is being deleted; try again when the deletion has finished")
        with self._backend.transaction() as tx:
            if not tx.hub_exists(name) and tx.hub_count() >= MAX_HUBS:
                raise ResourceExhaustedError(
                    f"cannot create task hub '{name}': the emulator serves at most {MAX_HUBS} task hubs"
                )
            tx.ensure_hub(name)
        with self._lock:
            self._known.add(name)

    def _delete_chunk(self, name: str) -> int:
        with self._backend.transaction() as tx:
            return tx.delete_hub_rows(name, DELETE_CHUNK)

    def _add(self, name: str) -> None:
        with self._backend.transaction() as tx:
            tx.ensure_hub(name)
        with self._lock:
            self._known.add(name)

    async def delete(self, name: str) -> None:
        """Deletes a hub and everything in it, a chunk of rows per transaction.

        Calls naming the hub answer UNAVAILABLE meanwhile; the hub's name goes last, so a deletion cut short
        (e.g. by a crash) leaves the hub with what was not yet deleted, and deleting it again finishes the job.
        """
        with self._lock:
            if name in self._deleting:
                raise UnavailableError(f"task hub '{name}' is already being deleted")
            self._deleting.add(name)
        try:
            while True:
                removed = await queries.storage_step(functools.partial(self._delete_chunk, name))
                if not removed:
                    break
                await queries.between_steps()
            with self._backend.transaction() as tx:
                tx.delete_hub(name)
            with self._lock:
                self._known.discard(name)
        finally:
            with self._lock:
                self._deleting.discard(name)


def check_name(name: str) -> None:
    """Refuses a task hub name that is too long or holds control characters."""
    if len(name) > MAX_HUB_NAME:
        raise InvalidArgumentError(
            f"task hub name is {len(name)} characters long; the limit is {MAX_HUB_NAME} (taskhub metadata)"
        )
    if not name.isprintable():
        raise InvalidArgumentError("task hub name must contain only printable characters (taskhub metadata)")
