"""A cron's firing starts a real run: the orchestration the schedule entity starts at a due time (given here the
record the schedule carries, as the entity gives it) creates the run through the run service, on the cron's thread or
on a new one, and the run is joined through the HTTP API like any other."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError

from durabletask.extensions.langgraph._server import assistants, crons, runs, threads
from durabletask.extensions.langgraph._server import crons_model as model
from durabletask.extensions.langgraph._server.launch_worker import register_project
from tests.langgraph_server.support_resources import ResourceHub, fire_cron, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]

_ROUTES = [assistants.routes, crons.routes, threads.routes, runs.routes]


@contextlib.contextmanager
def _workers_parts(hub: ResourceHub) -> Iterator[list[Any]]:
    # A factory graph is opened (and closed) on a loop of the registering thread's own: do both off the test's loop.
    held: list[contextlib.ExitStack] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def project_and_firing(worker: Any, project: Any) -> None:
        held.append(pool.submit(register_project, worker, project).result())
        crons.register_firing(worker, project, hub.async_client)

    try:
        yield [project_and_firing]
    finally:
        for stack in held:
            pool.submit(stack.close).result()
        pool.shutdown()


async def test_a_thread_crons_firing_runs_on_its_thread(resource_hub: ResourceHub) -> None:
    with _workers_parts(resource_hub) as parts:
        async with serve(resource_hub, _ROUTES, worker_parts=parts) as served:
            thread = await served.sdk.threads.create()
            cron = await served.sdk.crons.create_for_thread(
                thread["thread_id"],
                "chain",
                schedule="0 0 1 1 *",
                input={"topic": "news", "steps": []},
                metadata={"team": "ops"},
            )
            assert cron["thread_id"] == thread["thread_id"]
            fired = await fire_cron(resource_hub, cron["cron_id"], suffix="t")
            assert fired["thread_id"] == thread["thread_id"]
            values = await served.sdk.runs.join(thread["thread_id"], fired["run_id"])
            assert values == {"topic": "news", "steps": ["plan", "write"]}
            run = await served.sdk.runs.get(thread["thread_id"], fired["run_id"])
            assert run["metadata"]["cron_id"] == cron["cron_id"]
            assert run["metadata"]["team"] == "ops"


async def test_a_stateless_crons_firing_runs_on_a_new_thread(resource_hub: ResourceHub) -> None:
    with _workers_parts(resource_hub) as parts:
        async with serve(resource_hub, _ROUTES, worker_parts=parts) as served:
            cron = await served.sdk.crons.create(
                "nested",
                schedule="0 0 1 1 *",
                input={"topic": uuid.uuid4().hex, "steps": []},
                on_run_completed="keep",
            )
            fired = await fire_cron(resource_hub, cron["cron_id"], suffix="t")
            values = await served.sdk.runs.join(fired["thread_id"], fired["run_id"])
            # What plain LangGraph gives: the subgraph hands back the shared list, which the parent's reducer adds.
            assert values["steps"] == ["intro", "intro", "draft", "review"]
            assert (await served.sdk.threads.get(fired["thread_id"]))["thread_id"] == fired["thread_id"]


async def test_a_cron_fires_on_its_schedule(resource_hub: ResourceHub) -> None:
    with _workers_parts(resource_hub) as parts:
        async with serve(resource_hub, _ROUTES, worker_parts=parts) as served:
            thread = await served.sdk.threads.create()
            # Six fields: croniter's seconds come last, so this fires every second.
            cron = await served.sdk.crons.create_for_thread(
                thread["thread_id"],
                "chain",
                schedule="* * * * * *",
                input={"topic": "tick", "steps": []},
                multitask_strategy="enqueue",
            )
            found: list[Any] = []
            for _ in range(600):  # until the first firing's run appears (bounded; the clock decides, not a sleep)
                found = await served.sdk.runs.list(thread["thread_id"])
                if found:
                    break
                await asyncio.sleep(0.1)
            await served.sdk.crons.delete(cron["cron_id"])
            assert found, "no run was started by the cron"
            run = found[-1]
            assert run["metadata"]["cron_id"] == cron["cron_id"]
            assert run["metadata"]["cron_firing"].startswith(model.schedule_id(cron["cron_id"]) + "-")
            values = await served.sdk.runs.join(thread["thread_id"], run["run_id"])
            assert values["topic"] == "tick" and values["steps"][:2] == ["plan", "write"]


@pytest.mark.adversarial
async def test_a_cron_for_a_thread_that_does_not_exist_is_refused(resource_hub: ResourceHub) -> None:
    with _workers_parts(resource_hub) as parts:
        async with serve(resource_hub, _ROUTES, worker_parts=parts) as served:
            with pytest.raises(NotFoundError):
                await served.sdk.crons.create_for_thread(str(uuid.uuid4()), "chain", schedule="0 0 1 1 *")
            assert await served.sdk.crons.count() == 0
