"""Test helpers: an in-process, in-memory Durable Task backend for unit and integration tests.

``create_test_backend(port)`` starts the same emulator that ``durabletask-emulator`` runs, keeping
all state in memory, so tests exercise a real gRPC sidecar without any external process.
"""

from durabletask.testing.in_memory_backend import InMemoryOrchestrationBackend, create_test_backend

__all__ = ["InMemoryOrchestrationBackend", "create_test_backend"]
