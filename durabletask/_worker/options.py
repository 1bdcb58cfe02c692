"""Worker option objects: per-kind concurrency limits and orchestration versioning."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum

#: How many work items of one kind run at once when not configured (per processor).
_ITEMS_PER_PROCESSOR = 100


def _processor_count() -> int:
    return os.cpu_count() or 1


def _concurrency_default(name: str) -> int | None:
    cpus = _processor_count()
    if name == "maximum_thread_pool_workers":
        return cpus + 4  # the default ThreadPoolExecutor picks for I/O-bound work
    if name.startswith("maximum_concurrent_"):
        return _ITEMS_PER_PROCESSOR * cpus
    return None


@dataclass
class ConcurrencyOptions:
    """Limits on how much work a worker runs at the same time.

    Mutable, as Microsoft's: a limit may be changed before the worker starts. ``None`` (given or assigned)
    means the default; anything but a positive integer is refused, also when assigned.

    Args:
        maximum_concurrent_activity_work_items: Activities running at once (default 100 per CPU).
        maximum_concurrent_orchestration_work_items: Orchestration episodes at once (default 100 per CPU).
        maximum_concurrent_entity_work_items: Entity batches at once (default 100 per CPU).
        maximum_thread_pool_workers: Threads running synchronous user code (default CPUs + 4).
    """

    maximum_concurrent_activity_work_items: int | None = None
    maximum_concurrent_orchestration_work_items: int | None = None
    maximum_concurrent_entity_work_items: int | None = None
    maximum_thread_pool_workers: int | None = None

    def __setattr__(self, name: str, value: object) -> None:
        default = _concurrency_default(name)
        if default is not None:
            if value is None:
                value = default
            elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
                # Microsoft's class stores such a value; its worker then fails on it or never runs work.
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        object.__setattr__(self, name, value)


class VersionMatchStrategy(Enum):
    """Which orchestration versions a worker accepts, compared with its own version."""

    NONE = 1
    """Accept every version."""
    STRICT = 2
    """Accept only the worker's exact version."""
    CURRENT_OR_OLDER = 3
    """Accept the worker's version and anything older."""


class VersionFailureStrategy(Enum):
    """What a worker does with an orchestration whose version it does not accept."""

    REJECT = 1
    """Hand the work item back so a worker with a matching version can run it."""
    FAIL = 2
    """Complete the orchestration as failed with a ``VersionMismatch`` error."""


@dataclass
class VersioningOptions:
    """Orchestration versioning for a worker (mutable, as Microsoft's).

    Args:
        version: The orchestration version this worker runs.
        default_version: The version given to sub-orchestrations started without one.
        match_strategy: How an orchestration's version is compared with ``version``;
            ``None`` accepts every version.
        failure_strategy: What happens to an orchestration that does not match;
            ``None`` rejects it (hands it back to the backend).
    """

    version: str | None = None
    default_version: str | None = None
    match_strategy: VersionMatchStrategy | None = None
    failure_strategy: VersionFailureStrategy | None = None
