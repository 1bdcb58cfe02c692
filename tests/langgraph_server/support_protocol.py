"""What the protocol's tests share: an emulator, a worker serving ``support_protocol_graphs``, and two HTTP servers
over the same task hub (no memory shared but the hub), each on its own port, driven by ``langgraph_sdk``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from durabletask.extensions.langgraph._server.config import ServerSettings, load_config
from durabletask.extensions.langgraph._server.launch import Connection, running_worker, serve_http

GRAPHS = Path(__file__).with_name("support_protocol_graphs.py")
STARTUP_TIMEOUT = 120.0  # a loaded machine imports LangGraph slowly; no assertion depends on it


@dataclass
class Servers:
    """Two servers of one task hub."""

    urls: list[str]

    @property
    def url(self) -> str:
        return self.urls[0]


class _Loop:
    """An event loop on a thread of its own, serving the HTTP servers while the tests block on their clients."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="protocol-servers", daemon=True)
        self.thread.start()
        self.stops: list[asyncio.Event] = []
        self.tasks: list[Any] = []

    def serve(self, project: Any, connection: Connection) -> str:
        ready: concurrent.futures.Future[str] = concurrent.futures.Future()
        settings = ServerSettings(project=project, task_hub=connection.taskhub)

        async def run() -> None:
            stop = asyncio.Event()
            self.stops.append(stop)
            await serve_http(project, settings, connection, host="127.0.0.1", port=0, ready=ready.set_result, stop=stop)

        self.tasks.append(asyncio.run_coroutine_threadsafe(run(), self.loop))
        return str(ready.result(timeout=STARTUP_TIMEOUT))

    def close(self) -> None:
        for stop in self.stops:
            self.loop.call_soon_threadsafe(stop.set)
        for task in self.tasks:
            task.result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=60)
        self.loop.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    from dtscale_emulator.server import EmulatorServer

    folder = tmp_path_factory.mktemp("protocol")
    graphs = {"chat": f"{GRAPHS}:chat", "slow": f"{GRAPHS}:slow"}
    (folder / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
    project = load_config(folder / "langgraph.json")
    emulator = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    emulator.start()
    connection = Connection(endpoint=f"localhost:{emulator.port}", taskhub=f"p{uuid.uuid4().hex[:12]}")
    loop = _Loop()
    try:
        with running_worker(project, connection):
            yield Servers([loop.serve(project, connection), loop.serve(project, connection)])
            loop.close()
    finally:
        emulator.stop()


def read_events(
    url: str, thread_id: str, body: dict[str, Any], count: int, *, stop_at: str | None = None, **headers: str
) -> list[dict[str, Any]]:
    """The first ``count`` events of ``POST /threads/{id}/stream/events``, or those up to the first root lifecycle
    event ``stop_at`` (then the connection is closed)."""
    events: list[dict[str, Any]] = []
    with (
        httpx.Client(base_url=url, timeout=60) as http,
        http.stream("POST", f"/threads/{thread_id}/stream/events", json=body, headers=headers) as response,
    ):
        response.raise_for_status()
        data: list[str] = []
        for line in response.iter_lines():
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                events.append(json.loads("\n".join(data)))
                data = []
                if len(events) >= count or _is_lifecycle(events[-1], stop_at):
                    break
    return events


def _is_lifecycle(event: dict[str, Any], name: str | None) -> bool:
    params = event.get("params") or {}
    return event.get("method") == "lifecycle" and not params.get("namespace") and params["data"]["event"] == name


def command(url: str, thread_id: str, method: str, params: Any, ident: int = 1) -> httpx.Response:
    """``POST /threads/{id}/commands`` with one command."""
    with httpx.Client(base_url=url, timeout=60) as http:
        return http.post(f"/threads/{thread_id}/commands", json={"id": ident, "method": method, "params": params})
