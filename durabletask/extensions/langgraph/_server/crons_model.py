"""Crons as the SDK sees them, kept as scheduled tasks: the body of a creation or an update checked field by field,
and the ``Cron`` record a schedule carries (its orchestration input) read back with the schedule's state.

No I/O: ``crons_service.py`` sends what these functions build.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from durabletask.extensions.langgraph._server import store_requests as body_of
from durabletask.extensions.langgraph._server.errors import bad_request, not_found
from durabletask.extensions.langgraph._server.runs_body import run_request
from durabletask.scheduled import ScheduleCreationOptions, ScheduleDescription, ScheduleStatus

CRON_RUN = "lgs.cron_run"
"""The orchestrator each firing of a cron starts (its input: ``{"cron": <record>}``)."""
SCHEDULE_PREFIX = "lgcron-"
"""The schedule ID of a cron is this prefix and the cron's ID."""
SCHEDULE_MAX_CHARS = 256
"""The longest cron expression."""
PAYLOAD_MAX_BYTES = 256 * 1024
"""The largest run payload a cron carries (its input, config, context...), in bytes of JSON."""
# The fields of a cron's body that make up the run it starts (the rest describe the schedule).
RUN_FIELDS = (
    "assistant_id",
    "input",
    "config",
    "context",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "multitask_strategy",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
    "checkpoint_during",
)
SORT_FIELDS = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time")
SELECT_FIELDS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "payload",
    "user_id",
    "next_run_date",
    "metadata",
    "enabled",
)


def schedule_id(cron_id: str) -> str:
    """The scheduled task's ID of a cron."""
    return f"{SCHEDULE_PREFIX}{cron_id}"


def check_cron_id(cron_id: str) -> str:
    """A cron ID from a path: the UUID LangGraph gives crons (404 for anything else, as no such cron exists)."""
    try:
        return str(uuid.UUID(cron_id))
    except ValueError:
        raise not_found(f"cron '{cron_id[:100]}'") from None


def _end_time(body: Mapping[str, Any]) -> str | None:
    raw = body.get("end_time")
    if raw is None:
        return None
    if not isinstance(raw, str) or len(raw) > 64:
        raise bad_request("field 'end_time' must be an ISO 8601 date and time")
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(f"field 'end_time' is not an ISO 8601 date and time: {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _timezone(body: Mapping[str, Any]) -> str | None:
    zone = body_of.text(body, "timezone", max_chars=64, allow_empty=False)
    if zone is None:
        return None
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise bad_request(f"field 'timezone' is not an IANA time zone: {zone!r}") from None
    return zone


def _payload(body: Mapping[str, Any], base: Mapping[str, Any], threadless: bool) -> dict[str, Any]:
    payload = {**base, **{name: body[name] for name in RUN_FIELDS if body.get(name) is not None}}
    size = body_of.json_size(payload)
    if size > PAYLOAD_MAX_BYTES:
        raise bad_request(
            f"the cron's run (input, config, context...) is {size} bytes of JSON; the limit is {PAYLOAD_MAX_BYTES}"
        )
    run_request(payload, threadless=threadless)  # the run it will start must be a valid one: 422 now, not later
    return payload


def new_record(body: Mapping[str, Any], thread_id: str | None, now: str) -> dict[str, Any]:
    """The record of a new cron from its creation body (422 naming the first wrong field)."""
    schedule = body_of.text(body, "schedule", required=True, max_chars=SCHEDULE_MAX_CHARS, allow_empty=False)
    on_completed = body_of.choice(body, "on_run_completed", ("delete", "keep"), default="delete")
    enabled = body_of.boolean(body, "enabled")
    payload = _payload(body, {}, thread_id is None)
    record = {
        "cron_id": str(uuid.uuid4()),
        "assistant_id": payload["assistant_id"],
        "thread_id": thread_id,
        "on_run_completed": on_completed if thread_id is None else None,
        "end_time": _end_time(body),
        "schedule": schedule,
        "timezone": _timezone(body),
        "created_at": now,
        "updated_at": now,
        "payload": payload,
        "user_id": None,
        "metadata": body_of.obj(body, "metadata") or {},
        "enabled": True if enabled is None else enabled,
    }
    return record


def updated_record(current: Mapping[str, Any], body: Mapping[str, Any], now: str) -> dict[str, Any]:
    """A cron's record with an update body applied (metadata merged; ``end_time: null`` clears it)."""
    record = dict(current)
    schedule = body_of.text(body, "schedule", max_chars=SCHEDULE_MAX_CHARS, allow_empty=False)
    if schedule is not None:
        record["schedule"] = schedule
    if "end_time" in body:
        record["end_time"] = _end_time(body)
    zone = _timezone(body)
    if zone is not None:
        record["timezone"] = zone
    on_completed = body_of.choice(body, "on_run_completed", ("delete", "keep"))
    if on_completed is not None and record.get("thread_id") is None:
        record["on_run_completed"] = on_completed
    enabled = body_of.boolean(body, "enabled")
    if enabled is not None:
        record["enabled"] = enabled
    metadata = body_of.obj(body, "metadata")
    if metadata is not None:
        record["metadata"] = {**(record.get("metadata") or {}), **metadata}
    record["payload"] = _payload(body, record["payload"], record.get("thread_id") is None)
    record["updated_at"] = now
    return record


def schedule_options(record: Mapping[str, Any]) -> ScheduleCreationOptions:
    """The scheduled task that fires a cron (422 naming ``schedule`` when the expression is not one)."""
    end = record.get("end_time")
    try:
        options = ScheduleCreationOptions(
            schedule_id(record["cron_id"]),
            CRON_RUN,
            orchestration_input={"cron": dict(record)},
            end_at=datetime.fromisoformat(end) if end else None,
            cron=record["schedule"],
            time_zone=record.get("timezone"),
        )
    except ValueError as error:
        raise bad_request(f"field 'schedule' is not a cron expression this server runs: {error}") from None
    _check_fires(options.cron or record["schedule"], options.time_zone)
    return options


def _check_fires(expression: str, zone: str | None) -> None:
    """422 naming ``schedule`` for an expression that names no date at all (31 February): its schedule could
    never say when it runs next."""
    from croniter import CroniterError, croniter

    now = datetime.now(ZoneInfo(zone) if zone else timezone.utc)
    try:
        croniter(expression, now).get_next(datetime)
    except CroniterError:
        raise bad_request(
            f"field 'schedule' {expression[:100]!r} names no date that exists (such as 31 February): it would never run"
        ) from None


def cron_json(description: ScheduleDescription) -> dict[str, Any] | None:
    """The ``Cron`` a schedule carries, with its next run and whether it is enabled; ``None`` for another task."""
    carried = description.orchestration_input
    if not isinstance(carried, dict) or not isinstance(carried.get("cron"), dict):
        return None
    record = dict(carried["cron"])
    record["enabled"] = description.status == ScheduleStatus.ACTIVE
    next_run = description.next_run_at
    record["next_run_date"] = next_run.isoformat(timespec="microseconds") if next_run and record["enabled"] else None
    return record


def matches(record: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Whether a cron passes the search filters (assistant, thread, enabled, metadata containment)."""
    for name in ("assistant_id", "thread_id", "enabled"):
        if filters.get(name) is not None and record.get(name) != filters[name]:
            return False
    metadata = filters.get("metadata")
    return not metadata or body_of.contains(record.get("metadata") or {}, metadata)
