"""The ``durabletask`` operator command line against a live emulator task hub."""

from __future__ import annotations

import io
import json
from typing import Any

from durabletask import client, task
from durabletask.cli import main

from .conftest import Hub


def _run(hub: Hub, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--endpoint", hub.address, "--taskhub", hub.taskhub, *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def add_one(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def plus_one(ctx: task.OrchestrationContext, value: int) -> Any:
    result = yield ctx.call_activity(add_one, input=value)
    return result


def gate(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("open")
    return value


def test_start_wait_show_history_list_purge(hub: Hub) -> None:
    hub.start_worker([plus_one, gate], [add_one])
    code, out, err = _run(hub, "start", "plus_one", "--input", "41", "--id", "cli-1", "--tag", "team=ops")
    assert code == 0, err
    assert out.strip() == "scheduled cli-1"

    code, out, _ = _run(hub, "--json", "wait", "cli-1", "--timeout", "30")
    assert code == 0
    shown = json.loads(out)
    assert shown["runtime_status"] == "COMPLETED" and shown["serialized_output"] == "42"

    code, out, _ = _run(hub, "history", "cli-1")
    assert code == 0
    assert "TaskScheduled" in out and "TaskCompleted" in out and "ExecutionCompleted" in out
    assert "name=add_one" in out

    code, out, _ = _run(hub, "list", "--status", "completed")
    assert code == 0
    assert "cli-1" in out and "COMPLETED" in out

    code, out, _ = _run(hub, "purge", "cli-1")
    assert (code, out.strip()) == (0, "purged 1 instance(s)")
    code, _, err = _run(hub, "show", "cli-1")
    assert code == 1 and "no instance with ID 'cli-1'" in err


def test_raise_suspend_resume_terminate(hub: Hub) -> None:
    hub.start_worker([plus_one, gate], [add_one])
    c = hub.client()
    c.schedule_new_orchestration(gate, instance_id="cli-gate")
    c.wait_for_orchestration_start("cli-gate", timeout=30)
    assert _run(hub, "raise", "cli-gate", "open", "--data", '{"ok": true}')[0] == 0
    state = c.wait_for_orchestration_completion("cli-gate", timeout=30)
    assert state is not None and state.serialized_output == '{"ok":true}'

    c.schedule_new_orchestration(gate, instance_id="cli-term")
    c.wait_for_orchestration_start("cli-term", timeout=30)
    assert _run(hub, "suspend", "cli-term", "--reason", "look")[0] == 0
    assert _run(hub, "resume", "cli-term")[0] == 0
    assert _run(hub, "terminate", "cli-term", "--output", '"bye"')[0] == 0
    state = c.wait_for_orchestration_completion("cli-term", timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.TERMINATED


def test_bad_input_gets_clear_errors(hub: Hub) -> None:
    code, _, err = _run(hub, "start", "plus_one", "--input", "{not json")
    assert code == 2 and "--input is not valid JSON" in err
    code, _, err = _run(hub, "purge")
    assert code == 2 and "needs an instance ID or at least one filter" in err
    code, _, err = _run(hub, "rewind", "does-not-exist")
    assert code == 1 and "NOT_FOUND" in err
