"""Schedule actions when nothing runs them, and actions the page does not offer."""

from __future__ import annotations

import pytest

from dtscale_emulator.dashboard import schedules
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask._client.async_client import AsyncTaskHubGrpcClient


def act(address: str, schedule_id: str, action: str) -> dict[str, object]:
    async def run() -> dict[str, object]:
        c = AsyncTaskHubGrpcClient(host_address=address)
        try:
            return await schedules.act(c, schedule_id, action)
        finally:
            await c.close()

    return aio_loop.run(run())


def test_an_action_no_worker_runs_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedules, "OPERATION_TIMEOUT", 0.5)
    server = EmulatorServer(port=0, in_memory=True).start()
    try:
        with pytest.raises(LookupError, match="is a worker with scheduled tasks enabled connected"):
            act(server.address, "nightly", "pause")
        with pytest.raises(ValueError, match="pause, resume or delete, not 'explode'"):
            act(server.address, "nightly", "explode")
        with pytest.raises(ValueError, match="id is required"):
            act(server.address, "", "pause")
    finally:
        server.close()
