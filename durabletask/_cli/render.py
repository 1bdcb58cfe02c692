"""Turns states, histories and entities into tables or JSON for the terminal."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import IO, Any

from durabletask._cli.timeline import timeline


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if not f.name.startswith("_")}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _short(value: Any, width: int = 60) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


class Renderer:
    """Writes results either as aligned text or, with ``as_json``, as one JSON document."""

    def __init__(self, out: IO[str], *, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json

    def json(self, value: Any) -> None:
        self.out.write(json.dumps(_plain(value), indent=2, sort_keys=True) + "\n")

    def line(self, text: str) -> None:
        self.out.write(text + "\n")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        cells = [[_short(c) for c in row] for row in rows]
        widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
        self.line("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
        for row in cells:
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

    def fields(self, pairs: Sequence[tuple[str, Any]]) -> None:
        width = max(len(k) for k, _ in pairs)
        for key, value in pairs:
            self.line(f"{key.ljust(width)}  {'' if value is None else _plain(value)}")

    # -- domain views -------------------------------------------------------------------------------------

    def states(self, states: Sequence[Any]) -> None:
        if self.as_json:
            self.json(list(states))
            return
        rows = [
            (s.instance_id, s.name, s.runtime_status.name, _ts(s.created_at), _ts(s.last_updated_at)) for s in states
        ]
        self.table(("INSTANCE ID", "NAME", "STATUS", "CREATED", "UPDATED"), rows)

    def state(self, s: Any) -> None:
        if self.as_json:
            self.json(s)
            return
        failure = s.failure_details
        self.fields(
            [
                ("instance id", s.instance_id),
                ("name", s.name),
                ("status", s.runtime_status.name),
                ("created", _ts(s.created_at)),
                ("updated", _ts(s.last_updated_at)),
                ("input", s.serialized_input),
                ("output", s.serialized_output),
                ("custom status", s.serialized_custom_status),
                ("failure", f"{failure.error_type}: {failure.message}" if failure else None),
            ]
        )

    def history(self, events: Sequence[Any]) -> None:
        if self.as_json:
            self.json([{"type": type(e).__name__, **_plain(e)} for e in events])
            return
        rows = [
            (
                r.event_id,
                f"+{r.offset:.3f}s",
                r.kind,
                r.name,
                r.task,
                "" if r.duration is None else f"{r.duration:.3f}s",
                "" if r.size is None else f"{r.size} B",
                r.detail,
            )
            for r in timeline(events)
        ]
        if events:
            self.line(f"started {_ts(events[0].timestamp)} UTC, {len(events)} events")
        self.table(("ID", "TIME", "EVENT", "NAME", "TASK", "DURATION", "PAYLOAD", "DETAIL"), rows)


def _ts(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if value else ""
