"""Test helpers: an in-process Durable Task backend, and replay-safety checks of orchestrator code.

``create_test_backend(port)`` starts the same emulator that ``durabletask-emulator`` runs, keeping all state in
memory, so tests exercise a real gRPC sidecar without any external process.

``ReplayChecker(worker).check(histories)`` replays recorded histories (from a live task hub, history-export files
or ``durabletask history --json`` dumps) with the current orchestrator code and reports, per instance, whether it
replays or where it diverges: the sequence ID, the recorded call, the call the code makes now and its source line.
"""

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
