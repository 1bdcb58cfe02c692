"""Run webhooks end to end: a real worker POSTs to a real local receiver once a run ends, as LangGraph's server does,
and a receiver that fails or hangs holds up no run."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from durabletask import task
from durabletask.client import OrchestrationStatus
from durabletask.extensions.langgraph._records_effects import webhook_instance
from durabletask.extensions.langgraph._server import webhooks
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import project, receiver, serve, worker_for

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]


async def test_a_finished_run_posts_its_payload(runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LG_WEBHOOK_TOKEN", "s3cret")
    from durabletask.extensions.langgraph._server.config_webhooks import parse_webhooks

    settings = parse_webhooks(
        project().path,
        {
            "url": {"require_https": False, "disable_loopback": False},
            "headers": {"X-Auth": "Bearer ${{ env.LG_WEBHOOK_TOKEN }}"},
        },
    )
    async with receiver() as hook, serve(runs_hub, project(settings)) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        result = await s.sdk.runs.wait(
            tid, "chain", input={"topic": "t", "steps": []}, webhook=hook.url, metadata={"who": "me"}
        )
        [post] = await hook.wait_for(1)
        body = post["json"]
        runs = await s.sdk.runs.list(tid)
        assert body["run_id"] == runs[0]["run_id"] and body["thread_id"] == tid
        assert body["assistant_id"] == runs[0]["assistant_id"] and body["status"] == "success"
        assert body["values"] == result == {"topic": "t", "steps": ["plan:t", "write:t"]}
        assert body["metadata"] == {"who": "me"} and body["kwargs"]["webhook"] == hook.url
        assert body["multitask_strategy"] == "enqueue" and "error" not in body
        started, ended, sent = (
            datetime.fromisoformat(body[k]) for k in ("run_started_at", "run_ended_at", "webhook_sent_at")
        )
        assert started <= ended <= sent
        assert post["headers"]["X-Auth"] == "Bearer s3cret"
        assert post["headers"]["Content-Type"] == "application/json"
        await asyncio.sleep(0.5)
        assert len(hook.posts) == 1  # one run, one POST


async def test_a_failed_run_posts_its_error_and_allowed_fields_narrow_it(runs_hub: RunsHub) -> None:
    settings = WebhookSettings(disable_loopback=False, allowed_fields=frozenset({"run_id", "status", "error"}))
    async with receiver() as hook, serve(runs_hub, project(settings)) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "fragile", input={"topic": "boom", "steps": []}, webhook=hook.url)
        [post] = await hook.wait_for(1)
        assert post["json"] == {
            "run_id": run["run_id"],
            "status": "error",
            "error": {"error": "ValueError", "message": "the topic is boom"},
        }


async def test_a_threadless_run_posts_before_its_thread_goes(runs_hub: RunsHub) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        values = await s.sdk.runs.wait(None, "chain", input={"topic": "solo", "steps": []}, webhook=hook.url)
        [post] = await hook.wait_for(1)
        assert post["json"]["status"] == "success" and post["json"]["values"] == values
        assert post["json"]["thread_id"] and post["json"]["kwargs"]["webhook"] == hook.url


async def test_a_cancelled_run_posts_interrupted(runs_hub: RunsHub, tmp_path: Path) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "beat", input={"topic": str(tmp_path), "steps": []}, webhook=hook.url)
        while (await s.sdk.runs.get(tid, run["run_id"]))["status"] == "pending":
            await asyncio.sleep(0.05)
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True)
        [post] = await hook.wait_for(1)
        assert post["json"]["status"] == "interrupted" and post["json"]["run_id"] == run["run_id"]


@pytest.mark.adversarial
async def test_a_receiver_that_fails_forever_gets_three_attempts_and_blocks_nothing(
    runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker runs in this process: the same attempts, with pauses of a fraction of a second between them.
    policy = webhooks.DELIVERY_RETRY
    quick = task.RetryPolicy(
        first_retry_interval=timedelta(milliseconds=50),
        max_number_of_attempts=policy.max_number_of_attempts,
        backoff_coefficient=policy.backoff_coefficient,
    )
    monkeypatch.setattr(webhooks, "DELIVERY_RETRY", quick)
    async with receiver("fail") as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.wait(tid, "chain", input={"topic": "a", "steps": []}, webhook=hook.url)
        second = await s.sdk.runs.wait(tid, "chain", input={"topic": "b", "steps": []})
        assert first["steps"] == ["plan:a", "write:a"] and second["steps"][-1] == "write:b"
        runs = await s.sdk.runs.list(tid)
        delivery = webhook_instance(runs[-1]["run_id"])
        state = await s.ctx.client.wait_for_orchestration_completion(delivery, timeout=60)
        assert state is not None and state.runtime_status == OrchestrationStatus.COMPLETED
        assert '"delivered": false' in (state.serialized_output or "")
        assert len(hook.posts) == 3
        assert {p["json"]["run_id"] for p in hook.posts} == {runs[-1]["run_id"]}


@pytest.mark.adversarial
async def test_a_receiver_that_hangs_holds_up_no_later_run(runs_hub: RunsHub) -> None:
    async with receiver("hang") as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "a", "steps": []}, webhook=hook.url)
        await hook.wait_for(1)  # the POST is open, unanswered
        for topic in ("b", "c"):
            done = await s.sdk.runs.wait(tid, "chain", input={"topic": topic, "steps": []}, webhook=hook.url)
            assert done["steps"][-1] == f"write:{topic}"
        await hook.wait_for(3)  # each run's POST went out while the first still hangs
        assert not hook.release.is_set()
        hook.release.set()
        runs = await s.sdk.runs.list(tid)
        for run in runs:
            state = await s.ctx.client.wait_for_orchestration_completion(webhook_instance(run["run_id"]), timeout=60)
            assert state is not None and '"status": 200' in (state.serialized_output or "")


async def test_the_webhook_goes_out_with_no_server_running(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    w = worker_for(runs_hub, project())
    w.start()
    try:
        async with receiver() as hook:
            async with serve(runs_hub, start_worker=False) as s:
                tid = (await s.sdk.threads.create())["thread_id"]
                run = await s.sdk.runs.create(tid, "held", input={"topic": str(flag), "steps": []}, webhook=hook.url)
            flag.write_text("go")  # the run ends after its server has gone
            [post] = await hook.wait_for(1)
            assert post["json"]["run_id"] == run["run_id"] and post["json"]["status"] == "success"
    finally:
        w.stop()
