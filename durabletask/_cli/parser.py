"""Builds the argument parser: global connection options and one sub-command per operator action."""

from __future__ import annotations

import argparse

from durabletask._cli.commands.dashboard import add_parser as add_dashboard_parser
from durabletask._cli.commands.doctor import add_parser as add_doctor_parser
from durabletask._cli.commands.export import add_parser as add_export_parser
from durabletask._cli.commands.follow import add_parser as add_follow_parser
from durabletask._cli.commands.langgraph import add_parser as add_langgraph_parser
from durabletask._cli.commands.replay_check import add_parser as add_replay_check_parser
from durabletask._cli.commands.schedules import add_schedule_commands
from durabletask._cli.options import command_line_parser
from durabletask._cli.payloads import add_store_options

STATUS_NAMES = ("RUNNING", "COMPLETED", "FAILED", "TERMINATED", "CONTINUED_AS_NEW", "PENDING", "SUSPENDED")


def _status(value: str) -> str:
    upper = value.upper().replace("-", "_")
    if upper not in STATUS_NAMES:
        raise argparse.ArgumentTypeError(f"unknown status {value!r}; choose from {', '.join(STATUS_NAMES)}")
    return upper


def _add_instance(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance_id", help="the orchestration instance ID")


def _instance_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("get", aliases=["show"], help="show one instance's state")
    _add_instance(p)
    p.add_argument("--no-payloads", action="store_true", help="omit input, output and custom status")
    add_store_options(p)

    p = sub.add_parser("history", help="print an instance's event history, live or from an exported file")
    p.add_argument("instance_id", nargs="?", help="the orchestration instance ID (omit with --from-export)")
    p.add_argument("--from-export", metavar="FILE", help="render an exported history file (.jsonl.gz or .json)")
    p.add_argument("--payload-dir", help="the folder of a FilePayloadStore: externalized payloads are fetched")
    p.add_argument("--blob-connection-string", help="the connection string of a BlobPayloadStore, likewise")

    p = sub.add_parser("wait", help="wait for an instance to complete")
    _add_instance(p)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default 60)")

    p = sub.add_parser("raise-event", aliases=["raise"], help="raise an external event on an instance")
    _add_instance(p)
    p.add_argument("event_name")
    p.add_argument("--data", help="event payload as JSON")

    p = sub.add_parser("terminate", help="terminate an instance")
    _add_instance(p)
    p.add_argument("--output", help="output to record, as JSON")
    p.add_argument(
        "--recursive",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also terminate its sub-orchestrations (default: yes)",
    )

    for name, text in (
        ("suspend", "suspend an instance"),
        ("resume", "resume a suspended instance"),
        ("rewind", "rewind a failed instance so its failed work runs again"),
    ):
        p = sub.add_parser(name, help=text)
        _add_instance(p)
        p.add_argument("--reason", help="reason recorded in the history")

    p = sub.add_parser("attach", help="start an instance, or attach to it if the same run already exists")
    p.add_argument("name", help="registered orchestrator name")
    p.add_argument("--id", dest="instance_id", required=True, help="the instance ID to start or attach to")
    p.add_argument("--input", help="input as JSON (must match the recorded input)")
    p.add_argument("--version", help="orchestration version (must match the recorded version)")
    p.add_argument("--rewind-if-failed", action="store_true", help="rewind the instance if it failed")
    p.add_argument("--wait", type=float, metavar="SECONDS", help="then wait this long for the result")

    p = sub.add_parser("restart", help="restart an instance with its original name, input and version")
    _add_instance(p)
    p.add_argument("--new-id", action="store_true", help="restart under a new instance ID")


def _listing_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("list", help="list instances, newest filters first")
    p.add_argument("--status", type=_status, action="append", help="filter by runtime status (repeatable)")
    p.add_argument("--prefix", help="instance ID prefix")
    p.add_argument("--name", help="orchestrator name (exact, case-insensitive)")
    p.add_argument("--created-from", "--since", dest="created_from", help="ISO 8601 time, inclusive")
    p.add_argument("--created-to", "--until", dest="created_to", help="ISO 8601 time, inclusive")
    p.add_argument("--limit", type=int, default=100, help="at most this many rows (default 100)")
    p.add_argument("--payloads", action="store_true", help="fetch inputs and outputs too")

    p = sub.add_parser("start", help="schedule a new orchestration")
    p.add_argument("name", help="registered orchestrator name")
    p.add_argument("--input", help="input as JSON")
    p.add_argument("--id", dest="instance_id", help="instance ID (default: a new UUID)")
    p.add_argument("--version", help="orchestration version")
    p.add_argument("--start-at", help="ISO 8601 time to start at")
    p.add_argument("--tag", action="append", default=[], help="tag as key=value (repeatable)")

    p = sub.add_parser("purge", help="purge one instance, or every terminal instance matching a filter")
    p.add_argument("instance_id", nargs="?", help="instance to purge (omit to purge by filter)")
    p.add_argument("--no-recursive", action="store_true", help="keep sub-orchestrations")
    p.add_argument("--status", type=_status, action="append", help="filter: runtime status (repeatable)")
    p.add_argument("--created-from", help="filter: ISO 8601 time, inclusive")
    p.add_argument("--created-to", help="filter: ISO 8601 time, inclusive")
    p.add_argument("--timeout", type=float, help="filter purge: give up after this many seconds")


def _entity_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("entities", aliases=["entity"], help="inspect and signal durable entities")
    esub = p.add_subparsers(dest="entity_command", required=True, metavar="ACTION")
    g = esub.add_parser("get", help="show one entity")
    g.add_argument("entity_id", help="entity ID as @name@key")
    g.add_argument("--no-state", action="store_true", help="omit the state")
    ls = esub.add_parser("list", help="list entities")
    ls.add_argument("--prefix", help="entity instance ID prefix, e.g. @counter@")
    ls.add_argument("--no-state", action="store_true")
    s = esub.add_parser("signal", help="signal an entity operation")
    s.add_argument("entity_id", help="entity ID as @name@key")
    s.add_argument("operation")
    s.add_argument("--input", help="operation input as JSON")
    c = esub.add_parser("clean", help="remove empty entities and release orphaned locks")
    c.add_argument("--keep-empty", action="store_true")
    c.add_argument("--keep-locks", action="store_true")


def _all_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _listing_commands(sub)
    _instance_commands(sub)
    _entity_commands(sub)
    add_schedule_commands(sub)
    add_dashboard_parser(sub)
    add_export_parser(sub, _status)
    add_replay_check_parser(sub, _status)
    add_doctor_parser(sub)
    add_follow_parser(sub)
    add_langgraph_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    return command_line_parser(_all_commands)
