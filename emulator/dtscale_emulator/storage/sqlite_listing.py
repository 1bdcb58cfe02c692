"""Instance listing on SQLite: a page costs about the same at a thousand or a million stored instances.

Pages are ordered by instance ID (the continuation token is the last ID). A filter that is not on the ID
cannot be served in that order by one index, so a page is found in one of two ways, both on covering
indexes (the wide instance rows, with their payloads, are read only for the page itself):

- **walk**: one ordered walk of ``ix_instances_status`` (status, then ID) per wanted status, merged by
  SQLite (``MERGE (UNION ALL)``); the time bounds are checked on the index entries. It stops after the
  page, so it is cheap when matches are dense, whatever the store holds.
- **range**: when a time range holds fewer than :data:`RANGE_PROBE` instances (of any status), read them
  through the time index and sort them by ID. Their number is probed first, up to that cap, so the probe and
  the sort are bounded.

A time range with more entries than the cap is at least ``RANGE_PROBE / stored`` dense, so when the statuses
are spread evenly over time the walk finds a page after about ``page * stored / RANGE_PROBE`` entries. A
walk can be longer only when the wanted statuses are rare inside a large range (all the range's instances
running, say, and the query asks for completed ones): then it reads at most those statuses' entries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from dtscale_emulator.storage.base import InstanceQueryArgs, NameFilter
from dtscale_emulator.storage.sqlite_entities import glob_literal

# Wider than the per-time indexes of older stores, which were on (hub, time) only (schema version 3 drops those).
LISTING_SCHEMA = """
CREATE INDEX IF NOT EXISTS ix_instances_status ON instances (hub, status, instance_id, created_at, completed_at);
CREATE INDEX IF NOT EXISTS ix_instances_created_at ON instances (hub, created_at, status, instance_id);
CREATE INDEX IF NOT EXISTS ix_instances_completed_at ON instances (hub, completed_at, status, instance_id);
"""

ALL_STATUSES = tuple(range(8))  # OrchestrationStatus RUNNING (0) .. SUSPENDED (7)
TERMINAL = (1, 3, 5)  # COMPLETED, FAILED, TERMINATED
#: Entries of a time range read and sorted at most; denser ranges are walked in ID order instead.
RANGE_PROBE = 5000


def wanted_statuses(args: InstanceQueryArgs) -> tuple[int, ...]:
    if args.terminal_only:
        return tuple(s for s in args.statuses if s in TERMINAL) if args.statuses else TERMINAL
    return tuple(sorted(set(args.statuses))) if args.statuses else ALL_STATUSES


def _filters(args: InstanceQueryArgs) -> tuple[list[str], list[object]]:
    """The conditions every path checks besides hub and status (all on columns the indexes cover)."""
    bounds = (
        ("created_at >= ?", args.created_from), ("created_at < ?", args.created_to),
        ("completed_at >= ?", args.completed_from), ("completed_at < ?", args.completed_to),
        ("instance_id > ?", args.after_id),
    )  # fmt: skip
    clauses = [clause for clause, value in bounds if value is not None]
    params: list[object] = [value for _, value in bounds if value is not None]
    if args.id_prefix:
        clauses.append("instance_id GLOB ?")
        params.append(glob_literal(args.id_prefix) + "*")
    return clauses, params


def _time_range(args: InstanceQueryArgs) -> tuple[str, list[str], list[object]] | None:
    """The time index a range query can read, with the range's own bounds (None without a time filter)."""
    for index, column, low, high in (
        ("ix_instances_created_at", "created_at", args.created_from, args.created_to),
        ("ix_instances_completed_at", "completed_at", args.completed_from, args.completed_to),
    ):
        bounds = [(f"{column} >= ?", low), (f"{column} < ?", high)]
        if low is not None or high is not None:
            return index, [c for c, v in bounds if v is not None], [v for _, v in bounds if v is not None]
    return None


def walk_sql(statuses: tuple[int, ...], clauses: list[str]) -> str:
    extra = "".join(f" AND {c}" for c in clauses)
    leg = f"SELECT instance_id FROM instances INDEXED BY ix_instances_status WHERE hub = ? AND status = ?{extra}"
    return " UNION ALL ".join([leg] * len(statuses)) + " ORDER BY instance_id LIMIT ?"


def probe_sql(index: str, clauses: list[str]) -> str:
    where = "".join(f" AND {c}" for c in clauses)
    return f"SELECT COUNT(*) FROM (SELECT 1 FROM instances INDEXED BY {index} WHERE hub = ?{where} LIMIT ?)"


def range_sql(index: str, statuses: tuple[int, ...], clauses: list[str]) -> str:
    status = "" if statuses == ALL_STATUSES else f" AND status IN ({','.join('?' * len(statuses))})"
    where = f"hub = ?{status}" + "".join(f" AND {c}" for c in clauses)
    return f"SELECT instance_id FROM instances INDEXED BY {index} WHERE {where} ORDER BY instance_id LIMIT ?"


def query_instance_ids(db: sqlite3.Connection, hub: str, args: InstanceQueryArgs) -> list[str]:
    """The IDs of the page ``args`` asks for, in ID order."""
    statuses = wanted_statuses(args)
    if not statuses:
        return []
    clauses, params = _filters(args)
    time_range = _time_range(args)
    if time_range is not None:
        # Counts the range's entries whatever their status, so the probe itself reads at most RANGE_PROBE.
        index, range_clauses, range_params = time_range
        (entries,) = db.execute(probe_sql(index, range_clauses), (hub, *range_params, RANGE_PROBE)).fetchone()
        if entries < RANGE_PROBE:
            head = [hub] if statuses == ALL_STATUSES else [hub, *statuses]
            rows = db.execute(range_sql(index, statuses, clauses), (*head, *params, args.limit)).fetchall()
            return [r[0] for r in rows]
    legs = [value for status in statuses for value in (hub, status, *params)]
    return [r[0] for r in db.execute(walk_sql(statuses, clauses), (*legs, args.limit)).fetchall()]


#: A position in the created-time index: (created_at, status, instance_id), the index's own order.
AgeKey = tuple[int, int, str]


def keys_by_age(db: sqlite3.Connection, hub: str, args: InstanceQueryArgs, after: AgeKey | None) -> list[AgeKey]:
    """Instances matching the created range and statuses of ``args``, in the created-time index's order from
    ``after``: the order an emulator wrote the rows in, so a purge going this way empties whole pages of rows and
    of the time indexes instead of touching every page of the range at every step (as random IDs do)."""
    statuses = wanted_statuses(args)
    if not statuses:
        return []
    clauses = [f"status IN ({','.join('?' * len(statuses))})"]
    params: list[object] = [*statuses]
    if after is not None:  # a seek to the position; the lower bound is behind it
        clauses.append("(created_at, status, instance_id) > (?, ?, ?)")
        params.extend(after)
    elif args.created_from is not None:
        clauses.append("created_at >= ?")
        params.append(args.created_from)
    if args.created_to is not None:
        clauses.append("created_at < ?")
        params.append(args.created_to)
    rows = db.execute(
        "SELECT created_at, status, instance_id FROM instances INDEXED BY ix_instances_created_at "
        f"WHERE hub = ? AND {' AND '.join(clauses)} ORDER BY created_at, status, instance_id LIMIT ?",
        (hub, *params, args.limit),
    ).fetchall()
    return [(int(r[0]), int(r[1]), str(r[2])) for r in rows]


def placeholders(values: Collection[object]) -> str:
    """One ``?`` per value, comma-separated: the parameters of an ``IN (...)``."""
    return ",".join("?" for _ in values)


def accepted_clause(accept: NameFilter, name: str, version: str) -> tuple[str, list[object]]:
    """An ``AND (...)`` clause, and its parameters, keeping the rows whose name and version ``accept`` takes.

    Versions are matched in SQL too: filtered after a LIMIT, older versions could fill every page.
    """
    wanted = accept.versions_by_name
    if wanted is None:
        return "", []
    parts: list[str] = []
    params: list[object] = []
    any_version = sorted(n for n, versions in wanted.items() if not versions)
    if any_version:
        parts.append(f"{name} IN ({placeholders(any_version)})")
        params.extend(any_version)
    for n, versions in sorted(wanted.items()):
        if versions:
            parts.append(f"({name} = ? AND COALESCE({version}, '') IN ({placeholders(versions)}))")
            params.extend((n, *sorted(versions)))
    return f"AND ({' OR '.join(parts) or '0'})", params
