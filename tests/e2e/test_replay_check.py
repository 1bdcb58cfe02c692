"""The replay check against a live task hub: instances started by one release, checked with the next, through the
Python API and the ``durabletask replay-check`` command line (which imports the worker from the current folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from durabletask import client
from durabletask.testing import DivergenceKind, ReplayChecker, Verdict, histories_from_client

from . import replay_check_app as app
from .conftest import Hub, unique_id

HERE = Path(__file__).resolve().parent
APP_FILE = str(HERE / "replay_check_app.py")


def _line(marker: str, function: str) -> int:
    lines = Path(APP_FILE).read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if marker in lines[i]) + 1


def _wait_until_waiting(c: client.TaskHubGrpcClient, *instance_ids: str) -> None:
    # The custom status is committed with the turn that creates the timer: then the timer is in the history.
    for instance_id in instance_ids:
        deadline = time.monotonic() + 30
        while True:
            state = c.get_orchestration_state(instance_id)
            if state is not None and state.serialized_custom_status == '"waiting"':
                break
            assert time.monotonic() < deadline, f"{instance_id} never reached its timer"
            time.sleep(0.05)


@pytest.fixture
def running(hub: Hub) -> Iterator[dict[str, str]]:
    """Instances the first release started, each waiting on its durable timer."""
    w = app.build("v1", host_address=hub.address, metadata=hub.metadata)
    w.start()
    c = hub.client()
    ids = {
        "order": c.schedule_new_orchestration("order", input={"sku": "lamp"}, instance_id=unique_id("order")),
        "parent": c.schedule_new_orchestration(app.fulfil, instance_id=unique_id("parent")),
    }
    ids["child"] = f"{ids['parent']}-shipment"
    try:
        _wait_until_waiting(c, ids["order"], ids["child"])
        yield ids
    finally:
        w.stop()


@pytest.mark.local_only("reads histories the test wrote with its own worker")
def test_the_next_release_is_checked_against_the_running_instances(hub: Hub, running: dict[str, str]) -> None:
    c = hub.client()
    compatible = ReplayChecker(app.build_compatible()).check(histories_from_client(c))
    assert {(r.instance_id, r.verdict) for r in compatible.results} == {
        (running["order"], Verdict.REPLAYS),
        (running["parent"], Verdict.REPLAYS),
        (running["child"], Verdict.REPLAYS),
    }
    report = ReplayChecker(app.build_incompatible()).check(histories_from_client(c))
    found = {r.instance_id: r for r in report.results}
    assert found[running["parent"]].verdict is Verdict.REPLAYS
    order = found[running["order"]].divergence
    assert order.kind is DivergenceKind.NONDETERMINISM
    assert (order.sequence_id, order.recorded, order.current) == (2, "create_timer()", "call_activity('validate')")
    assert (order.location.path, order.location.line) == (
        os.path.relpath(APP_FILE),
        _line("inserted", "order_incompatible"),
    )
    child = found[running["child"]]
    assert child.parent_instance_id == running["parent"]
    assert child.divergence.location.line == _line("inserted", "shipment_incompatible")


@pytest.mark.local_only("reads histories the test wrote with its own worker")
def test_instances_are_selected_by_id_name_and_status(hub: Hub, running: dict[str, str]) -> None:
    c = hub.client()

    def checked(**selection: object) -> list[str]:
        return sorted(h.instance_id for h in histories_from_client(c, **selection))  # type: ignore[arg-type]

    # An instance's sub-orchestrations follow it, whatever they are named.
    assert checked(instance_ids=[running["parent"]]) == sorted([running["parent"], running["child"]])
    assert checked(instance_ids=[running["parent"]], sub_orchestrations=False) == [running["parent"]]
    assert checked(names=["ORDER"]) == [running["order"]]
    assert checked(statuses=[client.OrchestrationStatus.COMPLETED]) == []
    assert len(checked(statuses=[client.OrchestrationStatus.RUNNING])) == 3
    with pytest.raises(LookupError, match="no instance with ID 'missing'"):
        checked(instance_ids=["missing"])


def _cli(hub: Hub, *argv: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")}
    env["PYTHONPATH"] = str(HERE.parents[1])
    proc = subprocess.run(
        [sys.executable, "-m", "durabletask.cli", "replay-check", *hub.cli_args(), *argv],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=HERE,  # the worker's module is imported from the current folder
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.local_only("reads histories the test wrote with its own worker")
def test_the_command_line_exits_by_what_it_found(hub: Hub, running: dict[str, str], tmp_path: Path) -> None:
    code, out, err = _cli(hub, "--worker", "replay_check_app:build_compatible")
    assert (code, out.strip()) == (0, "3 execution(s) checked: 3 replay, 0 diverge, 0 skipped"), err

    code, out, err = _cli(hub, "--worker", "replay_check_app:build_incompatible")
    assert code == 1, err
    assert running["order"] in out and running["child"] in out
    assert running["parent"] not in out.replace(running["child"], "")  # only diverging instances are named
    assert f"replay_check_app.py:{_line('inserted', 'order_incompatible')} in order_incompatible" in out
    assert "history records create_timer() with ID 2, but the current code calls call_activity('validate')" in out

    code, out, err = _cli(hub, "--worker", "replay_check_app:build_incompatible", "--name", "order", "--json")
    assert code == 1, err
    report = json.loads(out)
    (result,) = report["results"]
    assert (result["instance_id"], result["verdict"]) == (running["order"], "diverges")
    assert result["divergence"]["sequence_id"] == 2


@pytest.mark.local_only("reads histories the test wrote with its own worker")
def test_the_command_line_checks_a_history_dump(hub: Hub, running: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")}
    dump = subprocess.run(
        [sys.executable, "-m", "durabletask.cli", *hub.cli_args(), "history", running["order"], "--json"],
        capture_output=True, text=True, timeout=60, env=env, check=True,
    )  # fmt: skip
    path = tmp_path / "order.json"
    path.write_text(dump.stdout)
    code, out, err = _cli(hub, "--worker", "replay_check_app:build_incompatible", "--from-export", str(path))
    assert code == 1, err
    assert out.splitlines()[0] == f"{running['order']}: order diverges"
    code, out, err = _cli(hub, "--worker", "replay_check_app:build_compatible", "--from-export", str(tmp_path))
    assert (code, out.strip()) == (0, "1 execution(s) checked: 1 replay, 0 diverge, 0 skipped"), err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("replay_check_app", "must be MODULE:CALLABLE"),
        ("no_such_module:build", "cannot import 'no_such_module'"),
        ("replay_check_app:missing", "has no attribute 'missing'"),
        ("replay_check_app:not_a_worker", "gave str, not a TaskHubGrpcWorker"),
        ("replay_check_app:started_worker", "gave a started worker"),
    ],
)
def test_a_bad_worker_is_a_usage_error(hub: Hub, spec: str, message: str) -> None:
    code, _, err = _cli(hub, "--worker", spec)
    assert code == 2
    assert message in err
