"""A cron's webhook: checked when the cron is made or changed, as a run's is, and POSTed when each of its runs ends."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from durabletask.extensions.langgraph import register_graph
from durabletask.extensions.langgraph._server import crons, runs, threads
from durabletask.extensions.langgraph._server.config_graphs import prepare_graph
from tests.langgraph_server import support_resources
from tests.langgraph_server.support_resources import ResourceHub, fire_cron, resource_hub, resources_emulator, serve
from tests.langgraph_server.support_webhooks import LOOPBACK_ALLOWED, receiver

__all__ = ["resource_hub", "resources_emulator"]
pytestmark = [pytest.mark.timeout(120)]
_ROUTES = [crons.routes, threads.routes, runs.routes]


def _parts(hub: ResourceHub) -> list[Any]:
    def register(worker: Any, project: Any) -> None:
        # The project's plain graphs (a factory is opened on a loop of its own, which the test's loop is not).
        for graph_id, spec in project.graphs.items():
            if not spec.is_factory:
                register_graph(worker, graph_id, prepare_graph(graph_id, spec.load(), None))
        threads.register_worker(worker, project)
        crons.register_worker(worker, project)
        crons.register_firing(worker, project, hub.async_client)

    return [register]


async def test_a_crons_run_posts_its_webhook(resource_hub: ResourceHub, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = support_resources.project
    monkeypatch.setattr(support_resources, "project", lambda: replace(plain(), webhooks=LOOPBACK_ALLOWED))
    async with receiver() as hook, serve(resource_hub, _ROUTES, worker_parts=_parts(resource_hub)) as served:
        thread = await served.sdk.threads.create()
        cron = await served.sdk.crons.create_for_thread(
            thread["thread_id"], "chain", schedule="0 0 1 1 *", input={"topic": "c", "steps": []}, webhook=hook.url
        )
        fired = await fire_cron(resource_hub, cron["cron_id"], suffix="w")
        await served.sdk.runs.join(thread["thread_id"], fired["run_id"])
        [post] = await hook.wait_for(1)
        assert post["json"]["run_id"] == fired["run_id"] and post["json"]["status"] == "success"
        assert post["json"]["metadata"]["cron_id"] == cron["cron_id"]


@pytest.mark.adversarial
async def test_a_cron_with_a_refused_webhook_is_not_made(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_parts(resource_hub)) as served:
        body = {"assistant_id": "chain", "schedule": "0 0 1 1 *", "webhook": "http://169.254.169.254/"}
        answer = await served.http.post("/runs/crons", json=body)
        assert answer.status_code == 422 and "cloud metadata" in answer.json()["detail"], answer.text
        made = await served.http.post("/runs/crons", json={**body, "webhook": "https://93.184.216.34/hook"})
        assert made.status_code == 200, made.text
        changed = await served.http.patch(
            f"/runs/crons/{made.json()['cron_id']}", json={"webhook": "file:///etc/passwd"}
        )
        assert changed.status_code == 422 and "http or https" in changed.json()["detail"], changed.text
        assert await served.sdk.crons.search() == [made.json()]
