"""What ``runs.get``, ``runs.list`` and ``runs.create`` answer, field by field, as LangGraph's server answers them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve
from tests.langgraph_server.support_webhooks import receiver
from tests.langgraph_server.support_webhooks import serve as serve_hooked

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]

#: The keys of a run's ``kwargs`` in LangGraph's server that this server gives too.
KWARGS = {
    "input",
    "command",
    "config",
    "context",
    "stream_mode",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "feedback_keys",
    "temporary",
    "subgraphs",
    "resumable",
    "checkpoint_during",
}


#: The fields of a run in LangGraph's server (its ``schema.Run``).
RUN = {
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
    "langsmith_session_name",
}


def _options(run: dict[str, Any]) -> dict[str, Any]:
    kwargs = run["kwargs"]
    return {k: kwargs[k] for k in ("webhook", "feedback_keys", "temporary", "subgraphs", "resumable")}


async def test_kwargs_hold_the_webhook_and_the_stream_options(runs_hub: RunsHub) -> None:
    async with receiver() as hooks, serve_hooked(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        hook = hooks.url
        made = await s.sdk.runs.create(
            tid, "chain", input={"topic": "x"}, webhook=hook, stream_subgraphs=True, stream_resumable=True
        )
        assert set(made["kwargs"]) >= KWARGS
        expected = {"webhook": hook, "feedback_keys": None, "temporary": False, "subgraphs": True, "resumable": True}
        assert _options(made) == expected
        assert made["kwargs"]["checkpoint_during"] is True
        await s.sdk.runs.join(tid, made["run_id"])
        got = await s.sdk.runs.get(tid, made["run_id"])
        assert _options(got) == expected and got["status"] == "success"
        assert got["kwargs"]["input"] == {"topic": "x"}
        plain = await s.sdk.runs.create(tid, "chain", input={"topic": "y"})
        await s.sdk.runs.join(tid, plain["run_id"])
        listed = {r["run_id"]: r for r in await s.sdk.runs.list(tid)}
        assert _options(listed[made["run_id"]]) == expected
        assert _options(listed[plain["run_id"]]) == {
            "webhook": None,
            "feedback_keys": None,
            "temporary": False,
            "subgraphs": False,
            "resumable": False,
        }
        assert listed[plain["run_id"]] == await s.sdk.runs.get(tid, plain["run_id"])
        for run in (made, got, *listed.values()):
            assert set(run) == RUN and run["langsmith_session_name"] is None
        (post,) = await hooks.wait_for(1)
        sent = post["json"]["kwargs"]  # the webhook's run is the run runs.get gives (with fewer of the options)
        assert sent["webhook"] == hook and sent == {k: got["kwargs"][k] for k in sent}


async def test_a_threadless_run_deleted_on_completion_is_temporary(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        kept = await s.sdk.runs.create(None, "chain", input={"topic": "x"}, on_completion="keep")
        assert kept["kwargs"]["temporary"] is False
        await s.sdk.runs.join(kept["thread_id"], kept["run_id"])
        assert (await s.sdk.runs.get(kept["thread_id"], kept["run_id"]))["kwargs"]["temporary"] is False
        made = await s.sdk.runs.create(None, "chain", input={"topic": "x"})
        assert made["kwargs"]["temporary"] is True
