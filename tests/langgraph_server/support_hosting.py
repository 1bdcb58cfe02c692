"""How the server tests host an application: a worker, the aiohttp app on port 0 of loopback, and the clients that
reach it (``langgraph_sdk``'s and a plain ``httpx`` one), all closed again in the reverse order."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import grpc
import httpx
from aiohttp import web
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from durabletask import client as dt_client
from durabletask import worker as dt_worker
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.middleware import middlewares


@dataclass
class TaskHub:
    """One task hub of the emulator, with how to reach it."""

    address: str
    taskhub: str

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [("taskhub", self.taskhub)]

    def async_client(self) -> dt_client.AsyncTaskHubGrpcClient:
        return dt_client.AsyncTaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def sync_client(self) -> dt_client.TaskHubGrpcClient:
        return dt_client.TaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def worker(self) -> dt_worker.TaskHubGrpcWorker:
        return dt_worker.TaskHubGrpcWorker(host_address=self.address, metadata=self.metadata)


def emulator_running() -> Iterator[Any]:
    """The body of an emulator fixture: an in-memory emulator on port 0 that makes task hubs as they are named."""
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


def fresh_hub(emulator: Any, prefix: str) -> Iterator[TaskHub]:
    """The body of a task hub fixture: a new task hub of ``emulator`` (named ``prefix`` and 12 hex digits), deleted
    afterwards."""
    hub = TaskHub(f"localhost:{emulator.port}", f"{prefix}{uuid.uuid4().hex[:12]}")
    yield hub
    with grpc.insecure_channel(hub.address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.DeleteTaskHub(pb.DeleteTaskHubRequest(), metadata=hub.metadata, timeout=60)


@dataclass
class Hosted:
    """Where a hosted application listens, and the two clients that reach it."""

    url: str
    sdk: LangGraphClient
    http: httpx.AsyncClient


def application(ctx: ServerContext, *route_modules: ModuleType) -> web.Application:
    """An app with the routes of ``route_modules`` over ``ctx``, behind the server's own middleware and body limit."""
    settings = ctx.settings
    app = web.Application(middlewares=middlewares(settings), client_max_size=settings.max_body_bytes)
    for module in route_modules:
        app.add_routes(module.routes(ctx))
    return app


@asynccontextmanager
async def hosted(
    app: web.Application,
    ctx: ServerContext,
    worker: dt_worker.TaskHubGrpcWorker,
    *,
    start_worker: bool = True,
    http_timeout: float = 60,
) -> AsyncIterator[Hosted]:
    """``app`` served on port 0 of 127.0.0.1 while ``worker`` runs (when ``start_worker``); on exit the clients,
    the server, ``ctx``'s task hub client and the worker are closed, in that order."""
    if start_worker:
        worker.start()
    try:
        runner = web.AppRunner(app)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            sdk = get_client(url=url)
            http = httpx.AsyncClient(base_url=url, timeout=http_timeout)
            try:
                yield Hosted(url, sdk, http)
            finally:
                await http.aclose()
                await sdk.aclose()
        finally:
            await runner.cleanup()
            await ctx.client.close()
    finally:
        if start_worker:
            worker.stop()
