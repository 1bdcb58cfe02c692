"""``durabletask export`` (terminal instances' histories to a folder or blob container) and
``durabletask history --from-export``.

The export runs in the command itself, through the client, with the history-export library's per-instance
step, file format, names and writers: no worker needs the export extension registered. A checkpoint file
after every instance makes a re-run after an interruption continue where it stopped, and each instance lands
in exactly one file. ``--job`` instead creates a durable export job (run by a worker that registered the
extension) and follows it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from durabletask import client as dt_client
from durabletask import history
from durabletask._attach.fingerprint import split_tags
from durabletask._cli import export_destination
from durabletask._cli.arguments import UsageError, parse_time
from durabletask._cli.export_checkpoint import Checkpoint, CheckpointMismatchError, fingerprint
from durabletask._cli.export_progress import reporter
from durabletask._cli.export_run import Exporter, Selection, Summary, count_matching, library_export_one
from durabletask._cli.render import Renderer

TERMINAL = ("COMPLETED", "FAILED", "TERMINATED")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], status: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export the histories of terminal instances to a folder or a blob container",
        description="Export the histories of instances that completed in [--since, --until) as gzipped JSON "
        "lines, one file per instance, in the layout and format of the history-export extension. Re-running "
        "the same command after an interruption resumes from its checkpoint.",
    )
    p.add_argument("--since", required=True, help="completed at or after this ISO 8601 time")
    p.add_argument("--until", help="completed before this ISO 8601 time (default: now)")
    p.add_argument("--status", type=status, action="append",
                   help="COMPLETED, FAILED or TERMINATED (repeatable; default: all three)")  # fmt: skip
    p.add_argument("--to", required=True, metavar="DIR|CONTAINER",
                   help="a local folder, or with --blob-connection-string a blob container name")  # fmt: skip
    p.add_argument("--prefix", help="name prefix (a sub-folder) for the files")
    p.add_argument(
        "--blob-connection-string", metavar="CS", help="an Azure Storage connection string: --to names a container"
    )
    p.add_argument("--checkpoint", metavar="FILE", help="checkpoint file (default: in DIR, or in ~/.cache for blobs)")
    p.add_argument("--restart", action="store_true", help="ignore an existing checkpoint and export everything again")
    p.add_argument("--page-size", type=int, default=100, help="instances listed per page, 1-1000 (default 100)")
    p.add_argument("--parallel", type=int, default=8, help="instances exported at once, 1-64 (default 8)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    p.add_argument("--job", action="store_true", help="create a durable export job (run by a worker) and follow it")
    p.add_argument("--job-id", help="with --job: the job ID (default: a new one)")
    p.add_argument("--timeout", type=float, help="with --job: seconds to follow it (default 3600)")


def _selection(a: argparse.Namespace) -> Selection:
    since = parse_time(a.since, "--since")
    until = parse_time(a.until, "--until") or datetime.now(timezone.utc)
    assert since is not None  # required by the parser
    if until <= since:
        raise UsageError(f"--until ({until.isoformat()}) must be later than --since ({since.isoformat()})")
    names = a.status or list(TERMINAL)
    other = [n for n in names if n not in TERMINAL]
    if other:
        raise UsageError(f"--status {', '.join(other)} is not terminal; export takes {', '.join(TERMINAL)}")
    if not 1 <= a.page_size <= 1000:
        raise UsageError(f"--page-size must be between 1 and 1000, got {a.page_size}")
    if not 1 <= a.parallel <= 64:
        raise UsageError(f"--parallel must be between 1 and 64, got {a.parallel}")
    statuses = [dt_client.OrchestrationStatus[n] for n in dict.fromkeys(names)]
    return Selection(since, until, statuses, a.page_size)


def _destination(a: argparse.Namespace) -> export_destination.Destination:
    if a.blob_connection_string:
        try:
            return export_destination.blob(a.to, a.blob_connection_string)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    return export_destination.folder(a.to)


def _source(a: argparse.Namespace) -> str:
    """Which task hub is exported, without the credentials a connection string may carry."""
    if not a.connection_string:
        return f"{a.endpoint}/{a.taskhub}"
    parts = dict(p.split("=", 1) for p in a.connection_string.split(";") if "=" in p)
    found = {k.lower(): v for k, v in parts.items()}
    return f"{found.get('endpoint', '')}/{found.get('taskhub', '')}"


def _checkpoint(a: argparse.Namespace, sel: Selection, dest: export_destination.Destination) -> Checkpoint:
    """The export's checkpoint, and the range's end it pins.

    The file is keyed by everything but ``--until``: without ``--until`` an unfinished export keeps the end it
    started with, so re-running the same command resumes it; a finished one starts over up to now.
    """
    parameters = {
        "source": _source(a),
        "since": sel.since.isoformat(),
        "statuses": sorted(s.name for s in sel.statuses),
        "destination": dest.where,
        "prefix": a.prefix,
    }
    path = Path(a.checkpoint) if a.checkpoint else dest.checkpoint_dir / f"checkpoint-{fingerprint(parameters)}.json"
    if a.restart:
        path.unlink(missing_ok=True)
    try:
        cp = Checkpoint.open(path, parameters)
    except CheckpointMismatchError as exc:
        raise UsageError(str(exc)) from exc
    wanted = sel.until.isoformat()
    if cp.until not in (None, wanted):
        if cp.complete:
            cp = Checkpoint(path, parameters)
        elif a.until is not None:
            raise UsageError(
                f"checkpoint {path} is an unfinished export up to --until {cp.until}; re-run with that --until "
                "to resume, or add --restart"
            )
    if cp.until is None:
        cp.until = wanted
    return cp


def _check_mode(a: argparse.Namespace) -> None:
    """Options of one mode given in the other would be silently unused: refuse them instead."""
    if a.job:
        given = [flag for flag, value in (("--checkpoint", a.checkpoint), ("--restart", a.restart)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: not with --job (for exports the command runs itself)")
        a.timeout = 3600.0 if a.timeout is None else a.timeout
        return
    given = [flag for flag, value in (("--job-id", a.job_id), ("--timeout", a.timeout)) if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only with --job")


def cmd_export(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer) -> int:
    _check_mode(a)
    sel = _selection(a)
    if a.job:
        from durabletask._cli.export_job import follow_job

        return follow_job(c, a, r, sel)
    dest = _destination(a)
    try:
        cp = _checkpoint(a, sel, dest)
        sel = dataclasses.replace(sel, until=datetime.fromisoformat(str(cp.until)))
        export_one = library_export_one(c, dest.writer, {"container": dest.container, "prefix": a.prefix})
        total = count_matching(c, sel)
        show = None if (r.as_json or a.no_progress) else reporter(sys.stderr)
        began = time.perf_counter()
        try:
            summary = Exporter(c, export_one, cp, parallel=a.parallel, on_progress=show).run(sel, total)
        finally:
            if show is not None:
                show.close()
        _report(r, summary, dest, cp, total, time.perf_counter() - began, sel)
    finally:
        dest.close()
    return 0 if not summary.failed else 1


def _report(
    r: Renderer,
    s: Summary,
    dest: export_destination.Destination,
    cp: Checkpoint,
    total: int,
    seconds: float,
    sel: Selection,
) -> None:
    failed = [{"instance_id": k, "error": v} for k, v in sorted(s.failed.items())]
    if r.as_json:
        r.json(
            {
                "destination": dest.where,
                "kind": dest.kind,
                "since": sel.since,
                "until": sel.until,
                "statuses": [x.name for x in sel.statuses],
                "matching": total,
                "exported": s.exported_now,
                "exported_total": s.exported_total,
                "skipped": s.skipped,
                "failed": failed,
                "complete": s.complete,
                "checkpoint": str(cp.path),
                "runs": cp.runs,
                "seconds": round(seconds, 3),
            }
        )
        return
    resumed = f", resumed (run {cp.runs})" if cp.runs > 1 else ""
    r.line(
        f"exported {s.exported_now} instance(s) to {dest.where} in {seconds:.1f}s{resumed}; "
        f"{s.exported_total} of {total} matching exported in all, {len(failed)} failed"
    )
    for item in failed:
        r.line(f"failed {item['instance_id']}: {item['error']}")
    if failed:
        r.line("run the same command again to retry the failed instances")
    r.line(f"checkpoint {cp.path}")


def cmd_history_from_export(a: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Renders an exported history file as ``history`` renders a live instance's history."""
    from durabletask.extensions.history_export.reader import read_exported_history

    if a.instance_id:
        err.write("durabletask history: give an instance ID or --from-export FILE, not both\n")
        return 2
    try:
        exported = read_exported_history(a.from_export)
        events = exported.events()
    except FileNotFoundError:
        err.write(f"durabletask history: {a.from_export}: no such file\n")
        return 1
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        err.write(f"durabletask history: {a.from_export} is not a readable exported history: {exc}\n")
        return 1
    Renderer(out, as_json=a.json).history([_as_live(e) for e in events])
    return 0


def _as_live(event: Any) -> Any:
    # The live view keeps the attach fingerprint out of an instance's tags; a file written from the raw history
    # (Microsoft's exporter) still has it there, so the same rule applies here.
    if isinstance(event, history.ExecutionStartedEvent) and event.tags:
        return dataclasses.replace(event, tags=split_tags(event.tags)[0])
    return event
