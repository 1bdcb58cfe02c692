"""The checkpoint file of a command-line export: which listing page it is on and what that page has done."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

VERSION = 1


class CheckpointMismatchError(ValueError):
    """The checkpoint file belongs to an export with other parameters."""


def fingerprint(parameters: dict[str, Any]) -> str:
    """A short stable digest of what defines an export (source, range, statuses, destination)."""
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Checkpoint:
    """Progress of one export, saved as it goes (at least once a second) so a re-run resumes where the last stopped.

    ``page_token`` is the continuation token that lists the page being worked on (``None`` for the first page);
    ``done_in_page`` the instances of that page already handled. Pages come from the backend in a stable order,
    so everything before the page was handled by earlier runs: together they say exactly what is left.
    """

    path: Path
    parameters: dict[str, Any]
    until: str | None = None
    page_token: str | None = None
    done_in_page: list[str] = field(default_factory=list)
    exported: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    runs: int = 0

    @classmethod
    def open(cls, path: Path, parameters: dict[str, Any]) -> Checkpoint:
        """The checkpoint at ``path``, or a fresh one when there is none yet."""
        if not path.exists():
            return cls(path, parameters)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointMismatchError(f"checkpoint {path} is unreadable ({exc}); remove it to start over") from exc
        if data.get("version") != VERSION or data.get("parameters") != parameters:
            raise CheckpointMismatchError(
                f"checkpoint {path} belongs to another export ({json.dumps(data.get('parameters'), sort_keys=True)}); "
                "give --checkpoint another file, or remove it to start over"
            )
        return cls(
            path,
            parameters,
            until=data.get("until"),
            page_token=data.get("page_token"),
            done_in_page=list(data.get("done_in_page") or []),
            exported=int(data.get("exported", 0)),
            failed=dict(data.get("failed") or {}),
            complete=bool(data.get("complete")),
            runs=int(data.get("runs", 0)),
        )

    def save(self) -> None:
        """Writes the checkpoint atomically: a reader (or a re-run after a kill) sees the old or the new one."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "version": VERSION,
            "parameters": self.parameters,
            "until": self.until,
            "page_token": self.page_token,
            "done_in_page": self.done_in_page,
            "exported": self.exported,
            "failed": self.failed,
            "complete": self.complete,
            "runs": self.runs,
            "updated_at": datetime.now(timezone.utc).isoformat(),
        }
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                json.dump(data, stream, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def record(self, instance_id: str, error: str | None) -> None:
        """One instance of the current page handled: exported, or failed with ``error``."""
        self.done_in_page.append(instance_id)
        if error is None:
            self.exported += 1
            self.failed.pop(instance_id, None)
        else:
            self.failed[instance_id] = error

    def next_page(self, token: str | None) -> None:
        """The current page is done; the next one is listed with ``token`` (``None``: there is none)."""
        self.done_in_page = []
        if token is None:
            self.complete = True
        else:
            self.page_token = token
