"""CLI for scheduled tasks: ``durabletask schedules list|get|create|pause|resume|delete``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from datetime import timedelta
from typing import Any

from durabletask import client as dt_client
from durabletask._cli.arguments import UsageError, parse_json, parse_time
from durabletask._cli.render import Renderer
from durabletask.scheduled import (
    ScheduleCreationOptions,
    ScheduleDescription,
    ScheduledTaskClient,
    ScheduleQuery,
    ScheduleStatus,
)

COMMAND_NAMES = ("schedules", "schedule")
_DURATION = re.compile(r"^(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?$")


def parse_interval(text: str) -> timedelta:
    """``90``, ``90s``, ``5m``, ``1h30m``, ``1d`` or ``hh:mm:ss``, as a timedelta."""
    value = text.strip().lower()
    try:
        if re.fullmatch(r"\d+(?:\.\d+)?", value):
            return timedelta(seconds=float(value))
        if ":" in value:
            hours, minutes, seconds = value.split(":")
            return timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))
    except ValueError:
        pass
    match = _DURATION.match(value)
    if not value or match is None or not any(match.groupdict().values()):
        raise argparse.ArgumentTypeError(f"must be a duration such as 90s, 5m, 1h30m, 1d or 01:30:00, got {text!r}")
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return timedelta(
        days=parts.get("d", 0), hours=parts.get("h", 0), minutes=parts.get("m", 0), seconds=parts.get("s", 0)
    )


def _status(text: str) -> ScheduleStatus:
    for status in (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED):
        if text.lower() == status.value.lower():
            return status
    raise argparse.ArgumentTypeError(f"unknown schedule status {text!r}; choose from active, paused")


def add_schedule_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schedules", aliases=["schedule"], help="manage scheduled tasks (recurring orchestrations)")
    ssub = p.add_subparsers(dest="schedule_command", required=True, metavar="ACTION")
    ls = ssub.add_parser("list", help="list schedules")
    ls.add_argument("--prefix", help="schedule ID prefix")
    ls.add_argument("--status", type=_status, help="active or paused")
    ls.add_argument("--created-from", help="ISO 8601 time, exclusive")
    ls.add_argument("--created-to", help="ISO 8601 time, exclusive")
    ls.add_argument("--page-size", type=int, help="schedules read per request (default 100)")
    g = ssub.add_parser("get", help="show one schedule")
    g.add_argument("schedule_id")
    c = ssub.add_parser("create", help="create a schedule (or replace an existing one's configuration)")
    c.add_argument("schedule_id")
    c.add_argument("orchestration", help="the orchestration each run starts")
    timing = c.add_mutually_exclusive_group(required=True)
    timing.add_argument("--every", type=parse_interval, help="interval, e.g. 90s, 5m, 1h30m, 1d or 01:30:00")
    timing.add_argument("--cron", help="cron expression, e.g. '0 2 * * *' (needs the cron extra)")
    c.add_argument("--time-zone", help="IANA time zone of the cron expression (default UTC)")
    c.add_argument("--input", help="input of every run, as JSON")
    c.add_argument("--instance-id", help="a fixed instance ID for every run (default: schedule ID + due time)")
    c.add_argument("--start-at", help="ISO 8601 time of the first run; runs align to it")
    c.add_argument("--end-at", help="ISO 8601 time after which the schedule deletes itself")
    c.add_argument("--start-immediately-if-late", action="store_true", help="run at once if the start has passed")
    for name, text in (("pause", "pause a schedule"), ("resume", "resume a paused schedule"), ("delete", "delete")):
        q = ssub.add_parser(name, help=text)
        q.add_argument("schedule_id")
    for q in ssub.choices.values():
        q.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the change (default 60)")


def _every(d: ScheduleDescription) -> str:
    if d.cron is not None:
        return f"cron {d.cron}" + (f" ({d.time_zone})" if d.time_zone else "")
    return str(d.interval) if d.interval is not None else ""


def _as_json(d: ScheduleDescription) -> dict[str, Any]:
    # Every field of the description; the interval in seconds, the status as it reads ("Active", "Paused").
    data = {f.name: getattr(d, f.name) for f in dataclasses.fields(d)}
    data["interval"] = d.interval.total_seconds() if d.interval is not None else None
    data["status"] = d.status.value
    return data


def _show(r: Renderer, d: ScheduleDescription) -> None:
    if r.as_json:
        r.json(_as_json(d))
        return
    r.fields(
        [
            ("schedule", d.schedule_id),
            ("status", d.status.value),
            ("orchestration", d.orchestration_name),
            ("every", _every(d)),
            ("input", None if d.orchestration_input is None else json.dumps(d.orchestration_input)),
            ("instance id", d.orchestration_instance_id),
            ("start at", d.start_at),
            ("end at", d.end_at),
            ("start if late", d.start_immediately_if_late),
            ("created", d.created_at),
            ("last run", d.last_run_at),
            ("next run", d.next_run_at),
        ]
    )


def _create(schedules: ScheduledTaskClient, a: argparse.Namespace) -> ScheduleDescription:
    if a.time_zone and not a.cron:
        raise UsageError("--time-zone applies to --cron schedules only")
    options = ScheduleCreationOptions(
        a.schedule_id,
        a.orchestration,
        a.every,
        orchestration_input=parse_json(a.input, "--input"),
        orchestration_instance_id=a.instance_id,
        start_at=parse_time(a.start_at, "--start-at"),
        end_at=parse_time(a.end_at, "--end-at"),
        start_immediately_if_late=a.start_immediately_if_late,
        cron=a.cron,
        time_zone=a.time_zone,
    )
    return schedules.create_schedule(options).describe()


def cmd_schedules(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer) -> int:
    schedules = ScheduledTaskClient(c, operation_timeout=a.timeout)
    action = a.schedule_command
    if action == "list":
        query = ScheduleQuery(
            status=a.status,
            schedule_id_prefix=a.prefix,
            created_from=parse_time(a.created_from, "--created-from"),
            created_to=parse_time(a.created_to, "--created-to"),
            page_size=a.page_size,
        )
        found = sorted(schedules.list_schedules(query), key=lambda d: d.schedule_id)
        if r.as_json:
            r.json([_as_json(d) for d in found])
        else:
            rows = [
                (d.schedule_id, d.status.value, d.orchestration_name, _every(d), d.next_run_at, d.last_run_at)
                for d in found
            ]
            r.table(("SCHEDULE", "STATUS", "ORCHESTRATION", "EVERY", "NEXT RUN", "LAST RUN"), rows)
        return 0
    if action == "get":
        _show(r, schedules.get_schedule_client(a.schedule_id).describe())
        return 0
    if action == "create":
        _show(r, _create(schedules, a))
        return 0
    handle = schedules.get_schedule_client(a.schedule_id)
    getattr(handle, action)()
    past = {"pause": "paused", "resume": "resumed", "delete": "deleted"}[action]
    if r.as_json:
        r.json({"action": past, "schedule_id": a.schedule_id})
    else:
        r.line(f"{past} {a.schedule_id}")
    return 0
