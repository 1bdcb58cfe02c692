"""Reading exported files back: the metadata, the raw event records and the history events they describe.

Accepts both formats of :mod:`.serialization` (told apart by the gzip magic number), as written by this package
or by Microsoft's exporter. Reading JSON lines is streamed: :func:`iter_exported_records` holds one line at a time.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import NoneType, UnionType
from typing import IO, Any

from durabletask import history, task

_GZIP_MAGIC = b"\x1f\x8b"
_EVENT_CLASSES: dict[str, type[history.HistoryEvent]] = {
    name: cls
    for name in history.__all__
    if isinstance(cls := getattr(history, name), type) and issubclass(cls, history.HistoryEvent)
}


@dataclass
class ExportedHistory:
    """One exported file: its schema version, instance ID, metadata (the instance's state) and event records."""

    schema_version: str
    instance_id: str
    metadata: dict[str, Any] | None
    records: list[dict[str, Any]] = field(default_factory=list)

    def events(self) -> list[history.HistoryEvent]:
        """The records as history events (``durabletask.history`` classes), oldest first."""
        return [event_from_dict(r) for r in self.records]


def _open_source(source: str | Path | bytes) -> IO[bytes]:
    if isinstance(source, bytes):
        return io.BytesIO(source)
    return open(source, "rb")


def iter_exported_records(source: str | Path | bytes) -> Iterator[dict[str, Any]]:
    """The file's records in order: first the header (``kind: "metadata"`` for JSON lines), then each event.

    For the single-document JSON format the first record is the document without its ``events``.

    Args:
        source: A file path, or the file's bytes (gzipped JSON lines or a JSON document).

    Raises:
        ValueError: A line of a JSON-lines file is not JSON.
    """
    with _open_source(source) as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic != _GZIP_MAGIC:
            document = json.load(raw)
            events = document.pop("events", [])
            yield document
            yield from events
            return
        with gzip.GzipFile(fileobj=raw, mode="rb") as text:
            for number, line in enumerate(text, start=1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"line {number} of the exported file is not JSON: {exc}") from None


def read_exported_history(source: str | Path | bytes) -> ExportedHistory:
    """Reads a whole exported file (a path or its bytes).

    Args:
        source: A file path, or the file's bytes.

    Raises:
        ValueError: the file is not an exported history (no header, or no ``instance_id``).
    """
    records = iter_exported_records(source)
    header = next(records, None)
    if not isinstance(header, dict) or "instance_id" not in header:
        raise ValueError("not an exported history: the first record has no 'instance_id'")
    metadata = header.get("metadata")
    return ExportedHistory(
        schema_version=str(header.get("schema_version", "")),
        instance_id=str(header["instance_id"]),
        metadata=metadata if isinstance(metadata, dict) else None,
        records=list(records),
    )


def event_from_dict(record: dict[str, Any]) -> history.HistoryEvent:
    """The history event an exported record describes.

    Args:
        record: One event record, as :func:`iter_exported_records` yields it.

    Raises:
        ValueError: ``event_type`` is missing or names no history event class.
    """
    name = record.get("event_type")
    cls = _EVENT_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown event_type {name!r} in exported record")
    fields = {k: v for k, v in record.items() if k != "event_type"}
    return typing.cast(history.HistoryEvent, _build(cls, fields))


def _build(cls: type[Any], data: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls, localns={"FailureDetails": task.FailureDetails})
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: _convert(hints[k], v) for k, v in data.items() if k in known})


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    options = typing.get_args(hint) if isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union else ()
    target = next((o for o in options if o is not NoneType), hint) if options else hint
    if target is datetime and isinstance(value, str):
        return datetime.fromisoformat(value)
    if isinstance(target, type) and dataclasses.is_dataclass(target) and isinstance(value, dict):
        return _build(target, value)
    return value


__all__ = ["ExportedHistory", "event_from_dict", "iter_exported_records", "read_exported_history"]
