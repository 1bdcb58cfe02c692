"""The exported file format: one instance's history as JSON or as gzip-compressed JSON lines.

``JSON`` is one document ``{"schema_version", "instance_id", "events": [...], "metadata"}``. ``JSONL_GZIP`` is a
first line ``{"kind": "metadata", "schema_version", "instance_id", "metadata"}`` followed by one line per event.
Each event is its ``to_dict()`` plus an ``event_type`` naming its class. Keys are sorted, separators compact and
the gzip header carries no time, so the same history always gives the same bytes (and the same bytes as
Microsoft's exporter).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from durabletask import client as client_module
from durabletask import history, task
from durabletask.extensions.history_export._internal import dt_to_iso
from durabletask.extensions.history_export.models import ExportFormat, ExportFormatKind

# gzip.compress's level, and zlib's window size with a gzip header and trailer.
_GZIP_LEVEL = 9
_GZIP_WBITS = 31


def event_to_dict(event: history.HistoryEvent) -> dict[str, Any]:
    """The event as JSON data, with ``event_type`` (its class name) telling the kinds of event apart.

    Args:
        event: Any history event.
    """
    return {"event_type": type(event).__name__, **event.to_dict()}


def failure_details_to_dict(failure: task.FailureDetails) -> dict[str, Any]:
    """Failure details (and their chain of inner failures) as JSON data.

    Args:
        failure: The failure details.
    """
    inner = failure.inner_failure
    return {
        "message": failure.message,
        "error_type": failure.error_type,
        "stack_trace": failure.stack_trace,
        "inner_failure": None if inner is None else failure_details_to_dict(inner),
        "properties": failure.properties,
    }


def orchestration_state_to_dict(state: client_module.OrchestrationState) -> dict[str, Any]:
    """The instance's state as the metadata of its exported file (status by name, times in UTC ISO 8601).

    Args:
        state: The instance's state.
    """
    failure = state.failure_details
    return {
        "instance_id": state.instance_id,
        "name": state.name,
        "runtime_status": state.runtime_status.name,
        "created_at": dt_to_iso(state.created_at),
        "last_updated_at": dt_to_iso(state.last_updated_at),
        "serialized_input": state.serialized_input,
        "serialized_output": state.serialized_output,
        "serialized_custom_status": state.serialized_custom_status,
        "failure_details": None if failure is None else failure_details_to_dict(failure),
    }


def _dump_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def serialize_history(
    events: Iterable[history.HistoryEvent],
    *,
    instance_id: str,
    fmt: ExportFormat,
    metadata: Mapping[str, Any] | None = None,
) -> bytes:
    """One instance's exported file.

    ``metadata`` (normally :func:`orchestration_state_to_dict`) goes in the document's ``metadata`` field, or in
    the first line for JSON lines. Events are consumed one at a time, so an iterator is never held whole.

    Args:
        events: The history, oldest first.
        instance_id: The exported instance.
        fmt: JSON or gzipped JSON lines, and the schema version written.
        metadata: The instance's state as JSON data; left out when ``None``.

    Raises:
        ValueError: ``fmt`` is of an unsupported kind.
    """
    if fmt.kind is ExportFormatKind.JSON:
        document: dict[str, Any] = {
            "schema_version": fmt.schema_version,
            "instance_id": instance_id,
            "events": [event_to_dict(e) for e in events],
        }
        if metadata is not None:
            document["metadata"] = dict(metadata)
        return _dump_json(document).encode("utf-8")
    if fmt.kind is ExportFormatKind.JSONL_GZIP:
        return _gzip_jsonl(events, instance_id=instance_id, fmt=fmt, metadata=metadata)
    raise ValueError(f"Unsupported export format kind: {fmt.kind!r}")


def _gzip_jsonl(
    events: Iterable[history.HistoryEvent],
    *,
    instance_id: str,
    fmt: ExportFormat,
    metadata: Mapping[str, Any] | None,
) -> bytes:
    header: dict[str, Any] = {"schema_version": fmt.schema_version, "instance_id": instance_id, "kind": "metadata"}
    if metadata is not None:
        header["metadata"] = dict(metadata)
    # Lines are compressed as they are produced, so only the compressed file is ever held whole. zlib's own gzip
    # wrapper (wbits=31) at level 9 writes exactly what gzip.compress(data, mtime=0) writes: no time, no name.
    compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    chunks = [compressor.compress((_dump_json(header) + "\n").encode("utf-8"))]
    for event in events:
        chunks.append(compressor.compress((_dump_json(event_to_dict(event)) + "\n").encode("utf-8")))
    chunks.append(compressor.flush())
    return b"".join(chunks)


def content_type_for(fmt: ExportFormat) -> str:
    """The HTTP content type of a file in ``fmt``.

    Args:
        fmt: The export format.

    Raises:
        ValueError: ``fmt`` is of an unsupported kind.
    """
    if fmt.kind is ExportFormatKind.JSON:
        return "application/json"
    if fmt.kind is ExportFormatKind.JSONL_GZIP:
        return "application/x-ndjson"
    raise ValueError(f"Unsupported export format kind: {fmt.kind!r}")


def content_encoding_for(fmt: ExportFormat) -> str | None:
    """The HTTP content encoding of a file in ``fmt`` (``"gzip"`` for JSON lines, else none).

    Args:
        fmt: The export format.
    """
    return "gzip" if fmt.kind is ExportFormatKind.JSONL_GZIP else None


def file_extension_for(fmt: ExportFormat) -> str:
    """The file name extension of ``fmt``: ``.json`` or ``.jsonl.gz``.

    Args:
        fmt: The export format.

    Raises:
        ValueError: ``fmt`` is of an unsupported kind.
    """
    if fmt.kind is ExportFormatKind.JSON:
        return ".json"
    if fmt.kind is ExportFormatKind.JSONL_GZIP:
        return ".jsonl.gz"
    raise ValueError(f"Unsupported export format kind: {fmt.kind!r}")


__all__ = [
    "content_encoding_for",
    "content_type_for",
    "event_to_dict",
    "failure_details_to_dict",
    "file_extension_for",
    "orchestration_state_to_dict",
    "serialize_history",
]
