"""The commands on orchestration instances; each handler takes a connected client and the parsed arguments."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from durabletask import client as dt_client
from durabletask._cli import payloads
from durabletask._cli.activities import running_attempts
from durabletask._cli.arguments import UsageError, parse_json, parse_time
from durabletask._cli.render import Renderer


def _statuses(names: list[str] | None) -> list[dt_client.OrchestrationStatus] | None:
    return [dt_client.OrchestrationStatus[n] for n in names] if names else None


Client = dt_client.TaskHubGrpcClient
Handler = Callable[[Client, argparse.Namespace, Renderer], int]


def cmd_list(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    query = dt_client.OrchestrationQuery(
        created_time_from=parse_time(a.created_from, "--created-from"),
        created_time_to=parse_time(a.created_to, "--created-to"),
        runtime_status=_statuses(a.status),
        max_instance_count=a.limit,
        fetch_inputs_and_outputs=a.payloads,
        instance_id_prefix=a.prefix,
    )
    states = c.get_all_orchestration_states(query)
    if a.name:
        states = [s for s in states if s.name.lower() == a.name.lower()]
    states = states[: a.limit]
    r.states(states)
    return 0


def cmd_show(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    store = payloads.store_from(a)
    state = c.get_orchestration_state(a.instance_id, fetch_payloads=not a.no_payloads)
    if state is None:
        raise LookupError(f"no instance with ID '{a.instance_id}'")
    r.state(payloads.resolve(state, store, a.payloads))
    if not r.as_json and state.runtime_status == dt_client.OrchestrationStatus.RUNNING:
        _show_bounded_activities(c, a.instance_id, r)
    return 0


def _show_bounded_activities(c: Client, instance_id: str, r: Renderer) -> None:
    """The running bounded activities: their timeouts and last heartbeat (time and details)."""
    try:
        events = c.get_orchestration_history(instance_id)
    except Exception as error:  # the state was shown; its history is extra, and may be refused or gone by now
        r.line(f"(running activities not shown: {error})")
        return
    attempts = running_attempts(events)
    if not attempts:
        return
    r.line("")
    rows = [
        (
            f"{a.name} #{a.task_id}",
            a.attempt,
            ", ".join(f"{kind} {seconds:g}s" for kind, seconds in a.timeouts.items()) or "-",
            _time(a.started_at),
            _time(a.last_heartbeat_at),
            "" if a.last_heartbeat_details is None else json.dumps(a.last_heartbeat_details),
        )
        for a in attempts
    ]
    r.table(("RUNNING ACTIVITY", "ATTEMPT", "TIMEOUTS", "STARTED", "LAST HEARTBEAT", "DETAILS"), rows)


def _time(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if value is not None else "-"


def cmd_history(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    if not a.instance_id:
        raise UsageError("give an instance ID, or --from-export FILE to render an exported history")
    if c.get_orchestration_state(a.instance_id, fetch_payloads=False) is None:
        raise LookupError(f"no instance with ID '{a.instance_id}'")
    store = payloads.store_from(a)
    r.history(payloads.resolve_history(c.get_orchestration_history(a.instance_id), store, a.instance_id))
    return 0


def cmd_wait(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    state = c.wait_for_orchestration_completion(a.instance_id, timeout=a.timeout)
    if state is None:
        raise LookupError(f"no instance with ID '{a.instance_id}'")
    r.state(state)
    return 0 if state.runtime_status == dt_client.OrchestrationStatus.COMPLETED else 1


def cmd_start(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    tags = {}
    for item in a.tag:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--tag must be key=value, got {item!r}")
        tags[key] = value
    instance_id = c.schedule_new_orchestration(
        a.name,
        input=parse_json(a.input, "--input"),
        instance_id=a.instance_id,
        version=a.version,
        start_at=parse_time(a.start_at, "--start-at"),
        tags=tags or None,
    )
    _done(r, "scheduled", instance_id)
    return 0


def cmd_raise(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    c.raise_orchestration_event(a.instance_id, a.event_name, data=parse_json(a.data, "--data"))
    _done(r, "raised", a.instance_id, event=a.event_name)
    return 0


def cmd_terminate(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    c.terminate_orchestration(a.instance_id, output=parse_json(a.output, "--output"), recursive=a.recursive)
    _done(r, "terminated", a.instance_id)
    return 0


def cmd_suspend(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    c.suspend_orchestration(a.instance_id, reason=a.reason)
    _done(r, "suspended", a.instance_id)
    return 0


def cmd_resume(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    c.resume_orchestration(a.instance_id, reason=a.reason)
    _done(r, "resumed", a.instance_id)
    return 0


def cmd_rewind(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    c.rewind_orchestration(a.instance_id, reason=a.reason)
    _done(r, "rewound", a.instance_id)
    return 0


def cmd_attach(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    handle = c.attach_orchestration(
        a.name,
        instance_id=a.instance_id,
        input=parse_json(a.input, "--input"),
        version=a.version,
        rewind_if_failed=a.rewind_if_failed,
    )
    if a.wait is None:
        _done(r, handle.action.value, a.instance_id)
        return 0
    state = handle.wait(timeout=a.wait)
    if r.as_json:
        r.json({"action": handle.action.value, "state": state})
    else:
        r.line(f"{handle.action.value} {a.instance_id}")
        r.state(state)
    return 0 if state.runtime_status == dt_client.OrchestrationStatus.COMPLETED else 1


def cmd_restart(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    new_id = c.restart_orchestration(a.instance_id, restart_with_new_instance_id=a.new_id)
    _done(r, "restarted", new_id, original=a.instance_id)
    return 0


def cmd_purge(c: Client, a: argparse.Namespace, r: Renderer) -> int:
    has_filter = a.status or a.created_from or a.created_to
    if a.instance_id and has_filter:
        raise UsageError("give either an instance ID or filter options (--status/--created-*), not both")
    if a.instance_id:
        result = c.purge_orchestration(a.instance_id, recursive=not a.no_recursive)
    elif has_filter:
        result = _purge_by_filter(c, a, r)
    else:
        raise UsageError("purge needs an instance ID or at least one filter (--status, --created-from, --created-to)")
    if r.as_json:
        r.json(result)
    else:
        complete = "" if result.is_complete in (None, True) else " (incomplete: run again to continue)"
        r.line(f"purged {result.deleted_instance_count} instance(s){complete}")
    return 0


def _purge_by_filter(c: Client, a: argparse.Namespace, r: Renderer) -> Any:
    """Purge in rounds until the backend reports completion, printing progress after each round."""
    total, rounds = 0, 0
    while True:
        result = c.purge_orchestrations_by(
            created_time_from=parse_time(a.created_from, "--created-from"),
            created_time_to=parse_time(a.created_to, "--created-to"),
            runtime_status=_statuses(a.status),
            recursive=not a.no_recursive,
            timeout=timedelta(seconds=a.timeout) if a.timeout else None,
        )
        total, rounds = total + result.deleted_instance_count, rounds + 1
        if result.is_complete is not False or result.deleted_instance_count == 0:
            result.deleted_instance_count = total
            return result
        if not r.as_json:
            r.line(f"… purged {total} instance(s) so far (round {rounds})")


def _done(r: Renderer, action: str, instance_id: str, **extra: str) -> None:
    if r.as_json:
        r.json({"action": action, "instance_id": instance_id, **extra})
    else:
        suffix = "".join(f" {k}={v}" for k, v in extra.items())
        r.line(f"{action} {instance_id}{suffix}")


COMMANDS: dict[str, Handler] = {
    "list": cmd_list,
    "get": cmd_show,
    "show": cmd_show,
    "history": cmd_history,
    "wait": cmd_wait,
    "start": cmd_start,
    "raise-event": cmd_raise,
    "raise": cmd_raise,
    "terminate": cmd_terminate,
    "suspend": cmd_suspend,
    "resume": cmd_resume,
    "rewind": cmd_rewind,
    "restart": cmd_restart,
    "attach": cmd_attach,
    "purge": cmd_purge,
}
