"""Threads filtered, sorted, paged and projected as ``threads.search`` asks (pure functions of the threads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from durabletask.extensions.langgraph._server.errors import bad_request

SORT_FIELDS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")
SELECT_FIELDS = (
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "config",
    "context",
    "status",
    "values",
    "interrupts",
)


def _contains(found: Any, wanted: Any) -> bool:
    """JSON containment, as LangGraph's server filters metadata and values (``@>``)."""
    if isinstance(wanted, Mapping):
        return isinstance(found, Mapping) and all(k in found and _contains(found[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(found, list) and all(any(_contains(f, w) for f in found) for w in wanted)
    return bool(found == wanted)


def matches(
    thread: Mapping[str, Any],
    *,
    metadata: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
    ids: Sequence[str] | None = None,
    status: str | None = None,
) -> bool:
    """Whether the thread passes every filter given."""
    if ids is not None and thread["thread_id"] not in ids:
        return False
    if status is not None and thread["status"] != status:
        return False
    if metadata and not _contains(thread.get("metadata") or {}, metadata):
        return False
    return not values or _contains(thread.get("values") or {}, values)


def _extracted(thread: Mapping[str, Any], extract: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, path in extract.items():
        value: Any = thread
        for part in path.split("."):
            index = part.split("[")
            value = value.get(index[0]) if isinstance(value, Mapping) else None
            for ix in index[1:]:
                try:
                    value = value[int(ix.rstrip("]"))] if isinstance(value, list) else None
                except (ValueError, IndexError):
                    value = None
        out[name] = value
    return out


def page(
    threads: list[dict[str, Any]],
    *,
    limit: int,
    offset: int,
    sort_by: str | None,
    sort_order: str | None,
    select: Sequence[str] | None,
    extract: Mapping[str, str] | None,
) -> list[dict[str, Any]]:
    """The threads sorted (newest first by default), sliced, with only ``select`` ed fields and ``extract`` ed paths."""
    key = sort_by or "created_at"
    if key not in SORT_FIELDS:
        raise bad_request(f"'sort_by' must be one of {', '.join(SORT_FIELDS)}, not {key!r}")
    if sort_order not in (None, "asc", "desc"):
        raise bad_request(f"'sort_order' must be 'asc' or 'desc', not {sort_order!r}")
    ordered = sorted(threads, key=lambda t: str(t.get(key) or ""), reverse=sort_order != "asc")
    chosen = ordered[offset : offset + limit]
    if select:
        unknown = [f for f in select if f not in SELECT_FIELDS]
        if unknown:
            raise bad_request(f"'select' field {unknown[0]!r} is unknown; known: {', '.join(SELECT_FIELDS)}")
        chosen = [{f: t.get(f) for f in select} | {"_src": t} for t in chosen]
    if extract:
        chosen = [{**t, "extracted": _extracted(t.get("_src", t), extract)} for t in chosen]
    return [{k: v for k, v in t.items() if k != "_src"} for t in chosen]
