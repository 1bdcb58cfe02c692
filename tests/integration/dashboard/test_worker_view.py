"""The emulator's worker-view protocol extension, as a client reaches it: hub, authentication and bad requests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from dtscale_emulator.dashboard import workers
from dtscale_emulator.dashboard.endpoint import EndpointClient, StaticBearer
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.protocol.extensions import WORKER_VIEW_METHOD, WORKER_VIEW_SERVICE
from dtscale_emulator.server import EmulatorServer
from durabletask import task, worker

TOKEN = "view-secret"


def flow(ctx: task.OrchestrationContext, _: Any) -> None:
    return None


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    s = EmulatorServer(port=0, in_memory=True, task_hubs=("default", "quiet"), auth_token=TOKEN).start()
    try:
        yield s
    finally:
        s.close()


def view(server: EmulatorServer, hub: str, token: str | None = TOKEN) -> dict[str, Any] | None:
    async def ask() -> dict[str, Any] | None:
        c = EndpointClient(server.address, hub, bearer=StaticBearer(token) if token else None)
        try:
            return await workers.fetch(c)
        finally:
            await c.close()

    return aio_loop.run(ask())


def test_it_lists_the_hubs_workers_with_their_filters(server: EmulatorServer) -> None:
    w = worker.TaskHubGrpcWorker(
        host_address=server.address, metadata=[("taskhub", "default"), ("authorization", f"Bearer {TOKEN}")]
    )
    w.add_orchestrator(flow)
    w.use_work_item_filters()
    w.start()
    try:
        for _ in range(100):  # setup: the worker's stream is open once the view shows it
            found = view(server, "default")
            if found and found["workers"]:
                break
            time.sleep(0.05)
        assert found is not None
        assert [x["orchestrations"] for x in found["workers"]] == [[{"name": "flow", "versions": []}]]
        assert view(server, "quiet") == {"workers": [], "backlog": []}  # per hub
    finally:
        w.stop()


def test_it_needs_the_token_and_a_known_hub(server: EmulatorServer) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        view(server, "default", token=None)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        view(server, "nope")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND and "nope" in str(unknown.value.details())


def test_a_request_with_content_is_refused_by_name(server: EmulatorServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        call = channel.unary_unary(f"/{WORKER_VIEW_SERVICE}/{WORKER_VIEW_METHOD}")
        with pytest.raises(grpc.RpcError) as bad:
            call(b"{}", metadata=[("authorization", f"Bearer {TOKEN}")])
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "takes an empty request" in bad.value.details()  # type: ignore[attr-defined]
