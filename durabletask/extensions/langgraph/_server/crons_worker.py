"""What fires a cron on a worker: the orchestration each due time starts, and the activity that starts the run.

The schedule entity starts ``lgs.cron_run`` with the cron's record; it calls ``lgs.cron_fire``, which starts the
cron's run through the run service exactly as ``POST /threads/{id}/runs`` (or ``POST /runs``) would, so a cron's run
is a run like any other: listed, streamed, joined and cancelled through any server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any

from durabletask import task
from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server.assistants_service import Assistants
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.runs_body import run_request
from durabletask.extensions.langgraph._server.services import ASSISTANTS_KEY, run_service

CRON_FIRE = "lgs.cron_fire"
"""The activity that starts one run of a cron."""


def cron_run(ctx: task.OrchestrationContext, request: Any) -> Generator[task.Task[Any], Any, Any]:
    """One firing of a cron: start its run and return ``{"run_id", "thread_id"}``."""
    if not isinstance(request, dict) or not isinstance(request.get("cron"), dict):
        raise ValueError("the input must be {'cron': <the cron's record>}")
    return (yield ctx.call_activity(CRON_FIRE, input=request["cron"]))


def run_body(record: dict[str, Any], fired_by: str) -> dict[str, Any]:
    """The run creation body of one firing: the cron's payload, its metadata, what to do with a new thread."""
    body = dict(record["payload"])
    body["metadata"] = {**(record.get("metadata") or {}), "cron_id": record["cron_id"], "cron_firing": fired_by}
    if record.get("thread_id") is None:
        body["on_completion"] = record.get("on_run_completed") or "delete"
    return body


def fire_activity(
    project: ProjectConfig, connect: Callable[[], AsyncTaskHubGrpcClient]
) -> Callable[[task.ActivityContext, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """The ``lgs.cron_fire`` activity of a worker serving ``project``, reaching the hub with ``connect()``."""
    from durabletask.extensions.langgraph._server.threads import install

    async def fire(ctx: task.ActivityContext, record: dict[str, Any]) -> dict[str, Any]:
        client = connect()
        try:
            server = ServerContext(client=client, graphs=project.graphs, settings=ServerSettings(project=project))
            server.extras[ASSISTANTS_KEY] = Assistants(client, project.graphs)
            install(server)
            threadless = record.get("thread_id") is None
            request = run_request(run_body(record, ctx.orchestration_id), threadless=threadless)
            run = await run_service(server).create(record.get("thread_id"), request)
            return {"run_id": run["run_id"], "thread_id": run["thread_id"]}
        finally:
            await client.close()

    return fire
