"""Why an instance is still PENDING, from its state and the connected workers' work-item filters.

Worker information has this shape (``None`` when the backend cannot tell)::

    {"workers": [{"id": ..., "orchestrations": [{"name": ..., "versions": [...]}] | None, ...}], "backlog": [...]}

where ``None`` for a kind means the worker sent no filter and takes every name, and an empty ``versions``
list takes every version.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from dtscale_emulator.dashboard.models import InstanceRow


def takes(worker: dict[str, Any], kind: str, name: str, version: str | None) -> bool:
    """Whether the worker's filter for ``kind`` lets through a work item of ``name`` and ``version``."""
    accepted = worker.get(kind)
    if accepted is None:
        return True
    for entry in accepted:
        if entry["name"] == name and (not entry["versions"] or (version or "") in entry["versions"]):
            return True
    return False


def pending_reason(state: InstanceRow, workers: dict[str, Any] | None) -> str | None:
    """A sentence saying why the instance has not started, or ``None`` when it is not PENDING."""
    if state.status != "PENDING":
        return None
    if state.scheduled_start_at is not None and state.scheduled_start_at > datetime.now(timezone.utc):
        return f"It is scheduled to start at {state.scheduled_start_at.isoformat()}."
    version = f" version {state.version!r}" if state.version else ""
    if workers is None:
        return "The backend does not say which workers are connected, so the dashboard cannot tell why."
    connected = workers.get("workers", [])
    if not connected:
        return f"No worker is connected to this task hub, so nothing takes orchestration {state.name!r}{version}."
    if not any(takes(w, "orchestrations", state.name, state.version) for w in connected):
        return (
            f"None of the {len(connected)} connected worker(s) takes orchestration {state.name!r}{version}: "
            "their work-item filters leave it out."
        )
    return f"A connected worker takes orchestration {state.name!r}{version}; it should start shortly."
