"""Running a project: the HTTP server, the workers, and ``dev``'s embedded emulator, until SIGTERM or Ctrl-C.

``serve`` runs the HTTP server only (stateless: any number behind a load balancer), ``worker`` the workers only,
and ``dev`` both, on the emulator started in this process with its state in a file under the project.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from durabletask.client import AsyncTaskHubGrpcClient, TaskHubGrpcClient
from durabletask.extensions.langgraph._server.app import create_app, route_modules
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.launch_worker import register_project
from durabletask.worker import TaskHubGrpcWorker

#: The server's clients log here, not on the SDK's default logger, which prints a line per call: a server makes
#: several calls per request. Warnings and errors still reach stderr (Python's last-resort handler).
CLIENT_LOG = logging.getLogger("durabletask.langgraph.server.client")
#: The folder under the project where ``dev`` keeps the emulator's state across restarts.
DEV_DATA_DIR = ".langgraph_dtscale"
DEV_DB_FILE = "state.db"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Seconds the answers in progress get to end once the server stops; then what is still open (an event stream,
#: whose client resumes it from another server) is cut. A run goes on in the task hub either way.
SHUTDOWN_GRACE = 3.0


@dataclass(frozen=True)
class Connection:
    """Where the task hub is: as the other ``durabletask`` commands take it.

    Args:
        endpoint: ``host:port`` or a URL (``https://`` for TLS).
        taskhub: The task hub's name.
        token: A bearer token sent as ``authorization``.
        connection_string: A DTS connection string; overrides the others.
    """

    endpoint: str = "localhost:8080"
    taskhub: str = "default"
    token: str | None = None
    connection_string: str | None = None

    @property
    def task_hub(self) -> str:
        """The task hub's name (the connection string's ``TaskHub`` when one is given)."""
        if self.connection_string:
            from durabletask.azuremanaged.connection_string import parse_connection_string

            return parse_connection_string(self.connection_string).task_hub
        return self.taskhub

    def _plain(self) -> dict[str, Any]:
        metadata = [("taskhub", self.taskhub)]
        if self.token:
            metadata.append(("authorization", f"Bearer {self.token}"))
        secure = self.endpoint.startswith(("https://", "grpcs://"))
        return {"host_address": self.endpoint, "metadata": metadata, "secure_channel": secure}

    def worker(self) -> TaskHubGrpcWorker:
        """A worker for the hub (not started)."""
        if self.connection_string:
            from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

            return DurableTaskSchedulerWorker.from_connection_string(self.connection_string)
        return TaskHubGrpcWorker(**self._plain())

    def client(self) -> TaskHubGrpcClient:
        """A (sync) client of the hub."""
        if self.connection_string:
            from durabletask.azuremanaged.client import DurableTaskSchedulerClient

            return DurableTaskSchedulerClient.from_connection_string(self.connection_string, logger=CLIENT_LOG)
        return TaskHubGrpcClient(**self._plain(), logger=CLIENT_LOG)

    def async_client(self) -> AsyncTaskHubGrpcClient:
        """An asyncio client of the hub (create it on the loop that uses it)."""
        if self.connection_string:
            from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient

            return AsyncDurableTaskSchedulerClient.from_connection_string(self.connection_string, logger=CLIENT_LOG)
        return AsyncTaskHubGrpcClient(**self._plain(), logger=CLIENT_LOG)


def stop_event() -> asyncio.Event:
    """An event set by SIGTERM or Ctrl-C (on the running loop), so the command shuts down in order."""
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, event.set)
    return event


async def serve_http(
    project: ProjectConfig,
    settings: ServerSettings,
    connection: Connection,
    *,
    host: str,
    port: int,
    ready: Callable[[str], None],
    stop: asyncio.Event,
) -> None:
    """Serve LangGraph's API on ``host:port`` until ``stop`` is set; ``ready`` gets the server's URL."""
    client = connection.async_client()
    with contextlib.ExitStack() as stack:
        store = _node_store(connection, stack, project)
        if store is not None:  # a factory's runtime.store, also when the server builds it (state reads, schemas)
            for spec in project.graphs.values():
                spec.use_store(store)
        await _serve_app(project, settings, client, host, port, ready, stop)


async def _serve_app(
    project: ProjectConfig,
    settings: ServerSettings,
    client: AsyncTaskHubGrpcClient,
    host: str,
    port: int,
    ready: Callable[[str], None],
    stop: asyncio.Event,
) -> None:
    try:
        app = create_app(ServerContext(client=client, graphs=project.graphs, settings=settings))
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_GRACE,
            # From when a connection opens or its last answer is sent, until a request head has arrived whole.
            keepalive_timeout=settings.idle_timeout,
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            ready(_url(runner, host, port))
            await stop.wait()
        finally:
            await runner.cleanup()
    finally:
        await client.close()


def _url(runner: web.AppRunner, host: str, port: int) -> str:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            bound_host = f"[{address[0]}]" if ":" in str(address[0]) else address[0]
            return f"http://{bound_host}:{address[1]}"
    return f"http://{host}:{port}"


@contextlib.contextmanager
def running_worker(project: ProjectConfig, connection: Connection, *, stop_grace: float | None = None) -> Any:
    """A started worker with every graph of ``project`` (and the route modules' parts); stopped on exit, giving
    running work ``stop_grace`` seconds (the SDK's default when ``None``) before it is left to be redelivered."""
    worker = connection.worker()
    with contextlib.ExitStack() as stack:
        store = _node_store(connection, stack, project)
        stack.enter_context(register_project(worker, project, store=store, connect=connection.async_client))
        worker.start()
        try:
            yield worker
        finally:
            worker.stop(stop_grace)


def _node_store(connection: Connection, stack: contextlib.ExitStack, project: ProjectConfig) -> Any:
    """The store the graphs' nodes get: the server's own (``/store/items``) when the store module offers one."""
    store_module = next((m for m in route_modules() if m.__name__.endswith(".store")), None)
    make = getattr(store_module, "node_store", None)
    if make is None:
        return None
    client = connection.client()
    stack.callback(client.close)
    return make(client, project)


@contextlib.contextmanager
def dev_emulator(project: ProjectConfig, data_dir: Path | None = None) -> Any:
    """The emulator, in this process, on a free loopback port, its state in ``.langgraph_dtscale/`` under the
    project (kept across restarts); yields its address."""
    from dtscale_emulator import EmulatorServer
    from dtscale_emulator.errors import EmulatorError

    folder = data_dir if data_dir is not None else project.base_dir / DEV_DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# the state of `durabletask langgraph dev`\n*\n", encoding="utf-8")
    try:
        server = EmulatorServer(host="127.0.0.1", port=0, db_path=str(folder / DEV_DB_FILE))
    except (EmulatorError, sqlite3.Error) as error:  # e.g. another `dev` serves this project's state
        raise DevStateError(f"cannot use {folder / DEV_DB_FILE}: {error}") from None
    with server:  # started here, stopped and its database closed at the end
        yield server.address


class DevStateError(OSError):
    """``dev`` cannot open the project's state (another ``dev`` holds it, or the file is unusable)."""
