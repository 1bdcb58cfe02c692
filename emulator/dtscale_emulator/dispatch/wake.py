"""The dispatcher's working sizes, and the clock callback that wakes it without keeping it alive."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Protocol


class Wakeable(Protocol):
    def wake(self) -> None: ...


#: Work items of one kind leased for a stream in one transaction (within its concurrency limit).
FETCH_BATCH = 16
#: Work items of one kind a stream may hold when its worker named no limit (0 in GetWorkItemsRequest):
#: what Microsoft's Python SDK asks for by default on one CPU.
DEFAULT_WORK_ITEM_LIMIT = 100
#: Seconds a send to a stream may wait for gRPC flow control before the stream is ended and the work items it
#: held go back to the queue (a reader that stopped reading).
STALL_SECONDS = 10.0
#: Leases of vanished streams remembered so their late completions still count (the oldest are forgotten).
MAX_ORPHANS = 10_000
#: A busy stream still asks for every kind this often: work can also appear as time passes
#: (an expired lease), which no change announces.
PROBE_ALL_SECONDS = 0.05


def weak_wake(dispatcher: Wakeable) -> Callable[[], None]:
    """A clock callback that wakes ``dispatcher`` without keeping it (and its server's store) alive."""
    ref = weakref.ref(dispatcher)

    def wake() -> None:
        found = ref()
        if found is not None:
            found.wake()

    return wake
