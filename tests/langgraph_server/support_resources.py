"""What the resource routes' tests share: an emulator, a task hub per test with a worker serving the records, and
an HTTP server with the assistants, store and crons routes, driven through ``langgraph_sdk``'s own client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from langgraph_sdk.client import LangGraphClient

from durabletask.extensions.langgraph._server import crons_model
from durabletask.extensions.langgraph._server.config import GraphSpec, ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.scheduled import AsyncScheduledTaskClient
from tests.langgraph_server.support_hosting import TaskHub, emulator_running, fresh_hub, hosted


@pytest.fixture(scope="session")
def resources_emulator() -> Iterator[Any]:
    yield from emulator_running()


#: One task hub of the emulator, with how to reach it.
ResourceHub = TaskHub


@pytest.fixture
def resource_hub(resources_emulator: Any) -> Iterator[ResourceHub]:
    yield from fresh_hub(resources_emulator, "r")


GRAPHS = {
    "chain": "tests.langgraph_server.support_resources_graphs:chain",
    "nested": "tests.langgraph_server.support_resources_graphs:nested",
    "factory": "tests.langgraph_server.support_resources_graphs:make_chain",
}
"""The graphs of the tests' project, by graph ID."""


def project(graphs: Mapping[str, str] | None = None) -> ProjectConfig:
    """A project whose ``langgraph.json`` would list ``graphs`` (module references, so nothing is copied)."""
    base = Path(__file__).resolve().parent
    specs = {
        graph_id: GraphSpec.parse(graph_id, entry, base, where=f"graphs.{graph_id}")
        for graph_id, entry in (graphs or GRAPHS).items()
    }
    return ProjectConfig(path=base / "langgraph.json", graphs=specs)


@web.middleware
async def _errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    try:
        return await handler(request)
    except HttpError as error:
        return web.json_response({"detail": error.detail}, status=error.status)


@dataclass
class Served:
    """A running HTTP server over one task hub."""

    url: str
    ctx: ServerContext
    sdk: LangGraphClient
    http: httpx.AsyncClient


RouteFactory = Callable[[ServerContext], list[web.AbstractRouteDef]]


@asynccontextmanager
async def serve(
    hub: ResourceHub,
    route_factories: Sequence[RouteFactory],
    *,
    worker_parts: Sequence[Callable[[Any, Any], None]] = (),
    start_worker: bool = True,
) -> AsyncIterator[Served]:
    """An aiohttp server with the given routes on port 0 and, unless told not to, a worker with ``worker_parts``."""
    config = project()
    w = hub.worker()
    for register in worker_parts:
        register(w, config)
    client = hub.async_client()
    ctx = ServerContext(client=client, graphs=config.graphs, settings=ServerSettings(project=config))
    app = web.Application(middlewares=[_errors], client_max_size=4 * 1024 * 1024)
    for factory in route_factories:
        app.add_routes(factory(ctx))
    async with hosted(app, ctx, w, start_worker=start_worker, http_timeout=30) as h:
        yield Served(h.url, ctx, h.sdk, h.http)


async def fire_cron(hub: ResourceHub, cron_id: str, *, suffix: str) -> dict[str, Any]:
    """Start the firing orchestration with what the cron's schedule carries, as its entity does at a due time (as
    instance ``<schedule ID>-<suffix>``); its output."""
    client = hub.async_client()
    try:
        schedule_id = crons_model.schedule_id(cron_id)
        description = await AsyncScheduledTaskClient(client).get_schedule(schedule_id)
        assert description is not None and description.orchestration_name == crons_model.CRON_RUN
        instance_id = await client.schedule_new_orchestration(
            crons_model.CRON_RUN, input=description.orchestration_input, instance_id=f"{schedule_id}-{suffix}"
        )
        state = await client.wait_for_orchestration_completion(instance_id, timeout=60)
        assert state is not None and state.serialized_output, state
        fired: dict[str, Any] = json.loads(state.serialized_output)
        return fired
    finally:
        await client.close()
