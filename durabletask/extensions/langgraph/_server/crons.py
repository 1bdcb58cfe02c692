"""The crons' routes: ``POST /runs/crons``, ``POST /threads/{id}/runs/crons``, ``PATCH``/``DELETE /runs/crons/{id}``,
``POST /runs/crons/search`` and ``POST /runs/crons/count``.

Each cron is a scheduled task (``durabletask.scheduled``) in the task hub; the worker side registers the schedule
entity and the firing orchestration (``register_worker``) and the activity that starts the run
(``register_firing``, which needs a way to reach the hub).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server import crons_model as model
from durabletask.extensions.langgraph._server import store_requests as body_of
from durabletask.extensions.langgraph._server.assistants_records import system_assistant_id
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.crons_service import Crons
from durabletask.extensions.langgraph._server.crons_worker import CRON_FIRE, cron_run, fire_activity
from durabletask.extensions.langgraph._server.listing import SearchPage
from durabletask.extensions.langgraph._server.services import ASSISTANTS_KEY, THREADS_KEY, AssistantResolver
from durabletask.extensions.langgraph._server.threads_service import MAX_THREAD_ID, check_thread_id
from durabletask.extensions.langgraph._server.webhooks import check_webhook

CRONS_KEY = "crons"
"""The key of the :class:`Crons` in ``ServerContext.extras``."""


def _filters(ctx: ServerContext, body: dict[str, Any]) -> dict[str, Any]:
    assistant_id = body_of.text(body, "assistant_id", max_chars=256)
    if assistant_id is not None and assistant_id in ctx.graphs:
        assistant_id = system_assistant_id(assistant_id)  # crons record the assistant's UUID, as runs do
    return {
        "assistant_id": assistant_id,
        "thread_id": body_of.text(body, "thread_id", max_chars=MAX_THREAD_ID),
        "enabled": body_of.boolean(body, "enabled"),
        "metadata": body_of.obj(body, "metadata"),
    }


class _CronRoutes:
    def __init__(self, ctx: ServerContext, crons: Crons) -> None:
        self._ctx = ctx
        self._crons = crons

    async def _assistant_id(self, body: dict[str, Any]) -> str:
        assistant_id = body_of.text(body, "assistant_id", required=True, max_chars=256, allow_empty=False)
        resolver: AssistantResolver | None = self._ctx.extras.get(ASSISTANTS_KEY)
        if resolver is None:
            return str(assistant_id)
        return (await resolver.resolve(str(assistant_id))).assistant_id

    async def _check_webhook(self, body: dict[str, Any]) -> None:
        """A cron's runs take its webhook: it is checked now as a run's is (see ``webhooks.check_webhook``)."""
        if body.get("webhook") is not None:
            await check_webhook(body["webhook"], self._ctx.settings.project.webhooks)

    async def create(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        await self._check_webhook(body)
        assistant_id = await self._assistant_id(body)
        return body_of.json_response(await self._crons.create(body, None, assistant_id))

    async def create_for_thread(self, request: web.Request) -> web.Response:
        thread_id = check_thread_id(request.match_info["thread_id"])  # the limits of every thread route
        body = await body_of.read_body(request)
        await self._check_webhook(body)
        assistant_id = await self._assistant_id(body)
        threads = self._ctx.extras.get(THREADS_KEY)
        if threads is not None:
            await threads.get(thread_id)  # 404 for a thread that does not exist
        return body_of.json_response(await self._crons.create(body, thread_id, assistant_id))

    async def update(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        await self._check_webhook(body)
        return body_of.json_response(await self._crons.update(request.match_info["cron_id"], body))

    async def delete(self, request: web.Request) -> web.Response:
        await self._crons.delete(request.match_info["cron_id"])
        return web.Response(status=204)

    async def search(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        page = SearchPage.read(body, model.SORT_FIELDS, model.SELECT_FIELDS)
        return page.answer(await self._crons.matching(_filters(self._ctx, body)), "cron_id")

    async def count(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        return body_of.json_response(len(await self._crons.matching(_filters(self._ctx, body))))


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The crons' routes; installs the context's :class:`Crons` under ``CRONS_KEY``."""
    crons = Crons(ctx.client)
    ctx.extras[CRONS_KEY] = crons
    handlers = _CronRoutes(ctx, crons)
    return [
        web.post("/runs/crons", handlers.create),
        web.post("/runs/crons/search", handlers.search),
        web.post("/runs/crons/count", handlers.count),
        web.patch("/runs/crons/{cron_id}", handlers.update),
        web.delete("/runs/crons/{cron_id}", handlers.delete),
        web.post("/threads/{thread_id}/runs/crons", handlers.create_for_thread),
    ]


def register_worker(worker: Any, project: Any = None) -> None:
    """Register the schedules (``configure_scheduled_tasks``) and the firing orchestration on a worker.

    Args:
        worker: A ``TaskHubGrpcWorker`` (not started).
        project: The project (``config.ProjectConfig``).
    """
    worker.configure_scheduled_tasks()
    worker.add_orchestrator(cron_run, name=model.CRON_RUN)


def register_firing(worker: Any, project: Any, connect: Callable[[], AsyncTaskHubGrpcClient]) -> None:
    """Register the activity that starts a cron's runs: it reaches the hub with a client from ``connect()``
    (made and closed on the activity's own event loop).

    Args:
        worker: A ``TaskHubGrpcWorker`` (not started).
        project: The project (``config.ProjectConfig``): its graphs, for the run service.
        connect: Makes an asyncio client of the worker's task hub.
    """
    worker.add_activity(fire_activity(project, connect), name=CRON_FIRE)
