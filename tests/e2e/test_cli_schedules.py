"""``durabletask schedules ...`` run as a subprocess against a live emulator task hub with a schedule worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

from .conftest import Hub
from .scheduled_support import report


def _run(hub: Hub, *argv: str) -> tuple[int, str, str]:
    env = hub.child_env({k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")})
    where = hub.cli_args()
    proc = subprocess.run(
        [sys.executable, "-m", "durabletask.cli", *where, *argv], capture_output=True, text=True, timeout=90, env=env
    )
    return proc.returncode, proc.stdout, proc.stderr


def _json(hub: Hub, *argv: str) -> Any:
    code, out, err = _run(hub, "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_create_list_get_pause_resume_delete(hub: Hub) -> None:
    w = hub.worker()
    w.add_orchestrator(report)
    w.configure_scheduled_tasks()
    w.start()
    start = (datetime.now(timezone.utc) + timedelta(days=1)).replace(microsecond=0)
    created = _json(
        hub,
        "schedules",
        "create",
        "nightly",
        "report",
        "--every",
        "1d",
        "--start-at",
        start.isoformat(),
        "--input",
        '{"report": "sales"}',
    )
    assert created["schedule_id"] == "nightly" and created["status"] == "Active"
    assert created["orchestration_input"] == {"report": "sales"} and created["interval"] == 86400.0

    code, out, _ = _run(hub, "schedules", "list")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["SCHEDULE", "STATUS", "ORCHESTRATION", "EVERY", "NEXT", "RUN", "LAST", "RUN"]
    assert row.split()[:3] == ["nightly", "Active", "report"]

    code, out, _ = _run(hub, "schedules", "pause", "nightly")
    assert (code, out.strip()) == (0, "paused nightly")
    assert [d["schedule_id"] for d in _json(hub, "schedules", "list", "--status", "paused")] == ["nightly"]
    assert _json(hub, "schedules", "list", "--status", "active") == []
    code, _, err = _run(hub, "schedules", "pause", "nightly")
    assert code == 1 and "cannot transition from 'Paused' to 'Paused'" in err

    assert _json(hub, "schedules", "resume", "nightly") == {"action": "resumed", "schedule_id": "nightly"}
    code, out, _ = _run(hub, "schedules", "get", "nightly", "--json")  # --json after the action works too
    shown = json.loads(out)
    assert code == 0 and shown["status"] == "Active"

    code, out, _ = _run(hub, "schedules", "get", "nightly")
    assert code == 0 and "status         Active" in out and "every          1 day, 0:00:00" in out

    assert _json(hub, "schedules", "delete", "nightly")["action"] == "deleted"
    code, _, err = _run(hub, "schedules", "get", "nightly")
    assert code == 1 and "Schedule with ID 'nightly' was not found" in err


def test_cron_schedules_and_bad_input(hub: Hub) -> None:
    w = hub.worker()
    w.add_orchestrator(report)
    w.configure_scheduled_tasks()
    w.start()
    created = _json(hub, "schedules", "create", "paris", "report", "--cron", "0 2 * * *", "--time-zone", "Europe/Paris")
    assert created["cron"] == "0 2 * * *" and created["time_zone"] == "Europe/Paris" and created["interval"] is None
    next_run = datetime.fromisoformat(created["next_run_at"])
    assert next_run.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris")).hour == 2

    code, _, err = _run(hub, "schedules", "create", "zero", "report", "--every", "0")
    assert code == 1 and "interval must be positive" in err
    code, _, err = _run(hub, "schedules", "create", "bad", "report", "--every", "soon")
    assert code == 2 and "--every" in err and "must be a duration" in err
    code, _, err = _run(hub, "schedules", "create", "bad", "report", "--cron", "every day")
    assert code == 1 and "cron 'every day' is not a valid cron expression" in err
    code, _, err = _run(hub, "schedules", "create", "bad", "report")
    assert code == 2 and "one of the arguments --every --cron is required" in err
    code, _, err = _run(hub, "schedules", "pause", "ghost")
    assert code == 1 and "'ghost'" in err
