"""The ``durabletask`` operator command line, run as a subprocess against a live emulator task hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id


def _run(
    hub: Hub, *argv: str, connection_string: str | None = None, endpoint: str | None = None
) -> tuple[int, str, str]:
    where = ["--connection-string", connection_string] if connection_string else hub.cli_args()
    if endpoint is not None:
        where = ["--endpoint", endpoint]
    env = hub.child_env({k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")})
    proc = subprocess.run([sys.executable, "-m", "durabletask.cli", *where, *argv], capture_output=True, text=True,
                          timeout=60, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def add_one(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def plus_one(ctx: task.OrchestrationContext, value: int) -> Any:
    result = yield ctx.call_activity(add_one, input=value)
    return result


def gate(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("open")
    return value


@pytest.mark.whole_taskhub("lists every completed instance of the hub")
def test_start_wait_show_history_list_purge(hub: Hub) -> None:
    hub.start_worker([plus_one, gate], [add_one])
    iid = unique_id("cli")
    hub.made.add(iid)  # started by the command line, whose calls the hub does not see
    code, out, err = _run(hub, "start", "plus_one", "--input", "41", "--id", iid, "--tag", "team=ops")
    assert code == 0, err
    assert out.strip() == f"scheduled {iid}"

    code, out, _ = _run(hub, "--json", "wait", iid, "--timeout", "30")
    assert code == 0
    shown = json.loads(out)
    assert shown["runtime_status"] == "COMPLETED" and shown["serialized_output"] == "42"

    code, out, _ = _run(hub, "history", iid)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("started ") and lines[0].endswith(" events")
    assert lines[1].split() == ["ID", "TIME", "EVENT", "NAME", "TASK", "DURATION", "PAYLOAD", "DETAIL"]
    scheduled = next(line.split() for line in lines if " TaskScheduled " in line)
    completed = next(line.split() for line in lines if " TaskCompleted " in line)
    assert scheduled[3:5] == ["add_one", "1"] and scheduled[5] == "2"  # name, task ID, payload "41" is 2 bytes
    assert completed[3:5] == ["add_one", "1"] and completed[5].endswith("s") and completed[6] == "2"
    assert "ExecutionCompleted" in out and "status=" in out

    code, out, _ = _run(hub, "list", "--status", "completed")
    assert code == 0
    assert iid in out and "COMPLETED" in out

    code, out, _ = _run(hub, "purge", iid)
    assert (code, out.strip()) == (0, "purged 1 instance(s)")
    code, _, err = _run(hub, "show", iid)
    assert code == 1 and f"no instance with ID '{iid}'" in err


def test_raise_suspend_resume_terminate(hub: Hub) -> None:
    hub.start_worker([plus_one, gate], [add_one])
    c = hub.client()
    gated = c.schedule_new_orchestration(gate, instance_id=unique_id("cli-gate"))
    c.wait_for_orchestration_start(gated, timeout=30)
    assert _run(hub, "raise", gated, "open", "--data", '{"ok": true}')[0] == 0
    state = c.wait_for_orchestration_completion(gated, timeout=30)
    assert state is not None and state.serialized_output == '{"ok": true}'

    ended = c.schedule_new_orchestration(gate, instance_id=unique_id("cli-term"))
    c.wait_for_orchestration_start(ended, timeout=30)
    assert _run(hub, "suspend", ended, "--reason", "look")[0] == 0
    assert _run(hub, "resume", ended)[0] == 0
    assert _run(hub, "terminate", ended, "--output", '"bye"')[0] == 0
    state = c.wait_for_orchestration_completion(ended, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.TERMINATED


def test_bad_input_gets_clear_errors(hub: Hub) -> None:
    code, _, err = _run(hub, "start", "plus_one", "--input", "{not json")
    assert code == 2 and "--input is not valid JSON" in err
    code, _, err = _run(hub, "purge")
    assert code == 2 and "needs an instance ID or at least one filter" in err
    code, _, err = _run(hub, "rewind", "does-not-exist")
    assert code == 1 and "NOT_FOUND" in err and len(err.splitlines()) == 1
    code, _, err = _run(hub, "get", "x", endpoint="localhost:1")
    assert code == 1 and "UNAVAILABLE" in err and len(err.splitlines()) == 1


def test_attach_and_connection_string(hub: Hub) -> None:
    hub.start_worker([plus_one, gate], [add_one])
    att = unique_id("cli-att")
    hub.made.add(att)  # started by the command line, whose calls the hub does not see
    code, out, err = _run(hub, "attach", "plus_one", "--id", att, "--input", "1", "--wait", "30")
    assert code == 0, err
    assert out.splitlines()[0] == f"started {att}" and "COMPLETED" in out
    code, out, _ = _run(hub, "attach", "plus_one", "--id", att, "--input", "1")
    assert (code, out.strip()) == (0, f"already_completed {att}")
    code, _, err = _run(hub, "attach", "plus_one", "--id", att, "--input", "2")
    assert code == 1 and err.startswith(f"durabletask attach: instance '{att}' does not match this run: input:")
    assert len(err.splitlines()) == 1

    code, out, err = _run(hub, "--json", "get", att, connection_string=hub.connection_string())
    assert code == 0, err
    assert json.loads(out)["serialized_output"] == "2"
    code, _, err = _run(hub, "list", connection_string="Endpoint=http://x;Bogus=1")
    assert code == 2 and "Bogus" in err


def _run_options_last(hub: Hub, *argv: str) -> tuple[int, str, str]:
    env = hub.child_env({k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")})
    proc = subprocess.run([sys.executable, "-m", "durabletask.cli", *argv, *hub.cli_args()], capture_output=True,
                          text=True, timeout=60, env=env)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.whole_taskhub("lists every instance and entity of the hub")
def test_global_options_may_follow_the_command(hub: Hub) -> None:
    # As with az, kubectl and gh: 'durabletask list --json --endpoint ... --taskhub ...'.
    hub.start_worker([plus_one], [add_one])
    iid = unique_id("cli-after")
    hub.made.add(iid)  # started by the command line, whose calls the hub does not see
    code, out, err = _run_options_last(hub, "start", "plus_one", "--input", "1", "--id", iid)
    assert (code, out.strip()) == (0, f"scheduled {iid}"), err
    code, out, err = _run_options_last(hub, "wait", iid, "--json", "--timeout", "30")
    assert code == 0, err
    assert json.loads(out)["serialized_output"] == "2"
    code, out, err = _run_options_last(hub, "list", "--json")
    assert code == 0, err
    assert [row["instance_id"] for row in json.loads(out)] == [iid]
    code, out, err = _run(hub, "entities", "list", "--json")
    assert (code, json.loads(out)) == (0, []), err
    # An option given after the command wins over the same option given before it.
    code, _, err = _run(hub, "--taskhub", "elsewhere", "show", iid, "--taskhub", hub.taskhub)
    assert code == 0, err


def test_a_command_prints_nothing_but_its_result(hub: Hub) -> None:
    # The clients log a line per call to stderr by default (as Microsoft's do); the command line does not.
    code, _, err = _run(hub, "list")
    assert (code, err) == (0, "")
