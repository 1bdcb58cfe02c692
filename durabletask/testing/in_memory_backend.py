"""The in-memory test backend: the emulator run in-process with all state in memory."""

from __future__ import annotations

from dtscale_emulator.limits import Limits
from dtscale_emulator.ops.clock import Clock
from dtscale_emulator.server import EmulatorServer
from durabletask.entities.entity_instance_id import EntityInstanceId as EntityInstanceId  # as in Microsoft's module

__all__ = ["InMemoryOrchestrationBackend", "create_test_backend"]


class InMemoryOrchestrationBackend:
    """An in-memory Durable Task backend serving gRPC on ``localhost:<port>``.

    Args:
        max_history_size: Most history events one orchestration may accumulate; a completion that
            would exceed it is rejected with RESOURCE_EXHAUSTED.
        port: Port to listen on (0 picks a free one; read it back from :attr:`port`).
        clock: Optional time source, e.g. :class:`dtscale_emulator.ManualClock` to skip time in tests.
    """

    def __init__(self, max_history_size: int = 10000, port: int = 50051, clock: Clock | None = None) -> None:
        self._server = EmulatorServer(
            host="localhost",
            port=port,
            in_memory=True,
            clock=clock,
            dynamic_task_hubs=True,
            limits=Limits(max_history_events=max_history_size),
        )

    @property
    def port(self) -> int:
        """The port the backend listens on."""
        return self._server.port

    @property
    def address(self) -> str:
        """``localhost:<port>``, ready for ``TaskHubGrpcClient(host_address=...)``."""
        return f"localhost:{self.port}"

    def start(self) -> str:
        """Starts serving and returns the address."""
        self._server.start()
        return self.address

    def stop(self, grace: float | None = None) -> None:
        """Stops serving; state is kept until :meth:`reset`."""
        self._server.stop(grace)

    def reset(self) -> None:
        """Deletes every orchestration instance and all pending work."""
        self._server.reset()


def create_test_backend(port: int = 50051, max_history_size: int = 10000) -> InMemoryOrchestrationBackend:
    """Creates and starts an in-memory backend listening on ``localhost:<port>``.

    Args:
        port: Port to listen on (default 50051).
        max_history_size: Most history events one orchestration may accumulate.

    Returns:
        The started backend; call ``stop()`` when done and ``reset()`` to clear state between tests.
    """
    backend = InMemoryOrchestrationBackend(max_history_size=max_history_size, port=port)
    backend.start()
    return backend
