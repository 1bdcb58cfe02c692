"""``durabletask replay-check``: replay recorded histories with the application's current orchestrator code.

The worker comes from ``--worker MODULE:CALLABLE`` (imported from the current folder, as uvicorn and gunicorn import
an application); the histories from the endpoint (selected by name, status, creation time or ID) or, with
``--from-export``, from history-export files and ``durabletask history --json`` dumps. Exit 0 when every history
replays, 1 when any diverges, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from durabletask import client as dt_client
from durabletask._cli.arguments import UsageError, parse_time
from durabletask._cli.render import Renderer
from durabletask._replay_check.checker import ReplayChecker
from durabletask._replay_check.histories import OrchestrationHistory
from durabletask._replay_check.report import ReplayReport
from durabletask._replay_check.sources import histories_from_client, histories_from_files
from durabletask._worker.grpc_worker import TaskHubGrpcWorker

EXIT_REPLAYS, EXIT_DIVERGES = 0, 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], status: Any) -> None:
    p = sub.add_parser(
        "replay-check",
        help="replay recorded histories with the current orchestrator code and report non-determinism",
        description="Replay the histories of running (or any selected) instances with the orchestrators an "
        "application registers, as its worker would, and report each instance that diverges: the sequence ID, "
        "the recorded call, the call the current code makes and its source line. Exit 0 when every history "
        "replays, 1 when any diverges, 2 on a usage error.",
    )
    p.add_argument("--worker", required=True, metavar="MODULE:CALLABLE",
                   help="a callable returning the application's unstarted worker, e.g. app.worker:build")  # fmt: skip
    p.add_argument("--name", action="append", help="orchestrator name (repeatable; case-insensitive)")
    p.add_argument("--instance", action="append", dest="instances", metavar="ID", help="instance ID (repeatable)")
    p.add_argument("--status", type=status, action="append", help="runtime status (repeatable)")
    p.add_argument("--created-from", help="created at or after this ISO 8601 time")
    p.add_argument("--created-to", help="created at or before this ISO 8601 time")
    p.add_argument("--from-export", action="append", metavar="PATH",
                   help="history-export files, folders of them, or 'history --json' dumps instead of the "
                        "endpoint (repeatable)")  # fmt: skip
    p.add_argument("--no-sub-orchestrations", action="store_true",
                   help="do not also check the sub-orchestrations of the selected instances")  # fmt: skip


def load_worker(spec: str) -> TaskHubGrpcWorker:
    """The worker ``MODULE:CALLABLE`` returns, importing MODULE from the current folder first."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"--worker must be MODULE:CALLABLE, e.g. myapp.worker:build_worker, got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # whatever importing the application raises, it is the command line's to report
        raise UsageError(f"--worker: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(f"--worker: {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    worker = target if isinstance(target, TaskHubGrpcWorker) or not callable(target) else target()
    if not isinstance(worker, TaskHubGrpcWorker):
        raise UsageError(f"--worker: {spec} gave {type(worker).__name__}, not a TaskHubGrpcWorker")
    if worker.is_running:
        raise UsageError(f"--worker: {spec} gave a started worker; return it before calling start()")
    return worker


def _histories(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace) -> Iterator[OrchestrationHistory]:
    statuses = [dt_client.OrchestrationStatus[name] for name in a.status or ()]
    if a.from_export:
        if a.created_from or a.created_to:
            raise UsageError("--created-from/--created-to select instances on an endpoint, not in --from-export files")
        return histories_from_files(a.from_export, instance_ids=a.instances, names=a.name, statuses=statuses)
    return histories_from_client(
        c,
        instance_ids=a.instances,
        names=a.name,
        statuses=statuses,
        created_from=parse_time(a.created_from, "--created-from"),
        created_to=parse_time(a.created_to, "--created-to"),
        sub_orchestrations=not a.no_sub_orchestrations,
        source=f"endpoint {a.endpoint}",
    )


def render(report: ReplayReport, r: Renderer) -> None:
    """The report: as JSON, or the diverging executions only, then one summary line."""
    if r.as_json:
        r.json(report.to_dict())
        return
    for result in report.diverging:
        r.line(result.describe())
    r.line(report.summary())


def cmd_replay_check(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer) -> int:
    checker = ReplayChecker(load_worker(a.worker))
    report = checker.check(_histories(c, a))
    render(report, r)
    return EXIT_REPLAYS if report.ok else EXIT_DIVERGES
