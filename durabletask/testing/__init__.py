"""Test helpers: an in-process Durable Task backend, replay-safety checks of orchestrator code, a pytest plugin.

``create_test_backend(port)`` starts the same emulator that ``durabletask-emulator`` runs, keeping all state in
memory, so tests exercise a real gRPC sidecar without any external process; ``time_skipping=True`` makes its clock
jump to the next due timer whenever no work is leased or ready.

``ReplayChecker(worker).check(histories)`` replays recorded histories (from a live task hub, history-export files
or ``durabletask history --json`` dumps) with the current orchestrator code and reports, per instance, whether it
replays or where it diverges: the sequence ID, the recorded call, the call the code makes now and its source line.

Names load on first use, so that the pytest plugin (:mod:`durabletask.testing.pytest_plugin`), which pytest loads
in every session once the package is installed, costs nothing in sessions that do not use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durabletask._replay_check.checker import ReplayChecker
    from durabletask._replay_check.histories import OrchestrationHistory
    from durabletask._replay_check.report import (
        Divergence,
        DivergenceKind,
        ReplayDivergenceError,
        ReplayReport,
        ReplayResult,
        SourceLocation,
        Verdict,
    )
    from durabletask._replay_check.sources import histories_from_client, histories_from_files, read_history_file
    from durabletask.testing.in_memory_backend import InMemoryOrchestrationBackend, create_test_backend

_EXPORTS: dict[str, str] = {
    "Divergence": "durabletask._replay_check.report",
    "DivergenceKind": "durabletask._replay_check.report",
    "InMemoryOrchestrationBackend": "durabletask.testing.in_memory_backend",
    "OrchestrationHistory": "durabletask._replay_check.histories",
    "ReplayChecker": "durabletask._replay_check.checker",
    "ReplayDivergenceError": "durabletask._replay_check.report",
    "ReplayReport": "durabletask._replay_check.report",
    "ReplayResult": "durabletask._replay_check.report",
    "SourceLocation": "durabletask._replay_check.report",
    "Verdict": "durabletask._replay_check.report",
    "create_test_backend": "durabletask.testing.in_memory_backend",
    "histories_from_client": "durabletask._replay_check.sources",
    "histories_from_files": "durabletask._replay_check.sources",
    "read_history_file": "durabletask._replay_check.sources",
}
# Reachable as an attribute without importing it first, as in Microsoft's package.
_SUBMODULES = frozenset({"in_memory_backend"})

__all__ = [
    "Divergence",
    "DivergenceKind",
    "InMemoryOrchestrationBackend",
    "OrchestrationHistory",
    "ReplayChecker",
    "ReplayDivergenceError",
    "ReplayReport",
    "ReplayResult",
    "SourceLocation",
    "Verdict",
    "create_test_backend",
    "histories_from_client",
    "histories_from_files",
    "read_history_file",
]


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
