"""A worker SIGKILLed while it POSTs a run's webhook: another worker sends it again (at least once)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import project, receiver, serve, worker_for

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(240)]
WORKER = Path(__file__).with_name("support_webhooks_worker.py")


async def test_a_webhook_cut_off_by_a_dead_worker_is_sent_again(runs_hub: RunsHub) -> None:
    first = subprocess.Popen(
        [sys.executable, str(WORKER), runs_hub.address, runs_hub.taskhub], stdout=subprocess.PIPE, text=True
    )
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "ready"
        async with receiver("hang") as hook, serve(runs_hub, start_worker=False) as s:
            tid = (await s.sdk.threads.create())["thread_id"]
            done = await s.sdk.runs.wait(tid, "chain", input={"topic": "k", "steps": []}, webhook=hook.url)
            [cut] = await hook.wait_for(1)  # the worker is inside the POST, unanswered
            first.send_signal(signal.SIGKILL)
            first.wait(30)
            hook.mode = "ok"
            second = worker_for(runs_hub, project())
            second.start()
            posts = await hook.wait_for(2, timeout=120)
            assert posts[1]["json"]["run_id"] == cut["json"]["run_id"]
            assert posts[1]["json"]["values"] == done and posts[1]["json"]["status"] == "success"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(30)
        if first.stdout is not None:
            first.stdout.close()
        if second is not None:
            second.stop()
