"""The two activities of an export job: list one page of terminal instances, and export one instance.

A client and a writer cannot travel through orchestration inputs, so each activity asks a resolver for a
:class:`HistoryExportContext` every time it runs. The resolver is captured when the activities are built
(:func:`build_activities`), never kept in a global, so a host may build the client and writer lazily or per call.
The activity bodies (:func:`run_list_terminal_instances`, :func:`run_export_instance_history`) take the context
explicitly, for hosts with their own dependency injection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from durabletask import client as client_module
from durabletask import task
from durabletask import worker as worker_module
from durabletask.extensions.history_export._internal import dt_from_iso
from durabletask.extensions.history_export.models import ExportFormat, ExportFormatKind
from durabletask.extensions.history_export.serialization import (
    content_encoding_for,
    content_type_for,
    file_extension_for,
    orchestration_state_to_dict,
    serialize_history,
)
from durabletask.extensions.history_export.writer import HistoryWriter

_TERMINAL_RUNTIME_STATUSES = frozenset(
    {
        client_module.OrchestrationStatus.COMPLETED,
        client_module.OrchestrationStatus.FAILED,
        client_module.OrchestrationStatus.TERMINATED,
    }
)

LIST_TERMINAL_INSTANCES_ACTIVITY = "list_terminal_instances"
"""The registered name of the listing activity."""

EXPORT_INSTANCE_HISTORY_ACTIVITY = "export_instance_history"
"""The registered name of the per-instance export activity."""


@dataclass
class HistoryExportContext:
    """What the activities need at run time: a client to read histories and a writer to store them."""

    client: client_module.TaskHubGrpcClient
    writer: HistoryWriter


HistoryExportContextResolver = Callable[[], HistoryExportContext]
"""Produces the context for one activity execution."""


def run_list_terminal_instances(context: HistoryExportContext, input: Mapping[str, Any]) -> dict[str, Any]:
    """One page of IDs of terminal instances matching the input's filter, and the key of the next page.

    Input: ``completed_time_from`` (required), ``completed_time_to``, ``runtime_status`` (names),
    ``page_size``, ``continuation_token``.

    Args:
        context: The client to list with and the writer.
        input: The filter, as :func:`build_list_activity_input` builds it.

    Raises:
        ValueError: ``completed_time_from`` is missing.
    """
    completed_time_from = dt_from_iso(input.get("completed_time_from"))
    if completed_time_from is None:
        raise ValueError("list_terminal_instances requires 'completed_time_from'")
    names = input.get("runtime_status")
    page_size = input.get("page_size")
    token = input.get("continuation_token")
    page = context.client.list_instance_ids(
        runtime_status=None if names is None else [client_module.OrchestrationStatus[n] for n in names],
        completed_time_from=completed_time_from,
        completed_time_to=dt_from_iso(input.get("completed_time_to")),
        page_size=None if page_size is None else int(page_size),
        continuation_token=None if token is None else str(token),
    )
    return {"instance_ids": list(page.items), "continuation_token": page.continuation_token}


def _failed(instance_id: str, error: str) -> dict[str, Any]:
    return {"instance_id": instance_id, "success": False, "error": error}


def run_export_instance_history(context: HistoryExportContext, input: Mapping[str, Any]) -> dict[str, Any]:
    """Writes one instance's history; returns ``{"instance_id", "success", "error"}`` rather than raising.

    An instance that is gone or no longer terminal is reported as a failure instead of writing an empty or
    partial file. The file name depends only on the instance ID and its last update time, so an export that is
    repeated (a retry, a worker that died mid-page) rewrites the same file.

    Args:
        context: The client to read the history with and the writer to write it with.
        input: ``instance_id``, ``format`` (an :class:`ExportFormat` dict; gzipped JSON lines by default) and
            ``destination`` (``container``, optional ``prefix``).

    Raises:
        TypeError: ``format`` is not a mapping.
        ValueError: ``destination.container`` is missing.
    """
    instance_id = str(input["instance_id"])
    fmt_data = input.get("format") or {"kind": ExportFormatKind.JSONL_GZIP.value, "schema_version": "1.0"}
    if not isinstance(fmt_data, Mapping):
        raise TypeError("format must be a mapping")
    fmt = ExportFormat.from_dict(fmt_data)
    destination: Mapping[str, Any] = input.get("destination") or {}
    if not destination.get("container"):
        raise ValueError("destination.container is required")
    container = str(destination["container"])
    prefix = None if destination.get("prefix") is None else str(destination["prefix"])
    try:
        state = context.client.get_orchestration_state(instance_id, fetch_payloads=True)
        if state is None:
            return _failed(instance_id, f"instance {instance_id!r} no longer exists or has been purged")
        if state.runtime_status not in _TERMINAL_RUNTIME_STATUSES:
            return _failed(
                instance_id,
                f"instance {instance_id!r} is no longer terminal (runtime_status={state.runtime_status.name})",
            )
        payload = serialize_history(
            context.client.get_orchestration_history(instance_id),
            instance_id=instance_id,
            fmt=fmt,
            metadata=orchestration_state_to_dict(state),
        )
        context.writer.write(
            instance_id=instance_id,
            container=container,
            blob_name=blob_name_for(
                instance_id=instance_id, last_updated_at=state.last_updated_at, prefix=prefix, fmt=fmt
            ),
            payload=payload,
            content_type=content_type_for(fmt),
            content_encoding=content_encoding_for(fmt),
            metadata={"instance_id": instance_id},
        )
    except Exception as ex:
        return _failed(instance_id, f"{type(ex).__name__}: {ex}")
    return {"instance_id": instance_id, "success": True, "error": None}


def blob_name_for(*, instance_id: str, last_updated_at: datetime, prefix: str | None, fmt: ExportFormat) -> str:
    """The file name of one exported instance: ``[prefix/]<sha256 hex>.<ext>``.

    The hash is over ``"<last update time in .NET round-trip form>|<instance ID>"``, the names the .NET and
    Microsoft Python exporters give: the same completion always maps to the same name, a later completion of
    the same ID to a new one, and IDs need no escaping.

    Args:
        instance_id: The exported instance.
        last_updated_at: The instance's last update time.
        prefix: A folder to put the file in; none when ``None`` or empty.
        fmt: The file's format, which gives the extension.
    """
    digest = hashlib.sha256(f"{dotnet_round_trip(last_updated_at)}|{instance_id}".encode()).hexdigest()
    name = digest + file_extension_for(fmt)
    return f"{prefix.rstrip('/')}/{name}" if prefix else name


def dotnet_round_trip(moment: datetime) -> str:
    """``moment`` as .NET's ``DateTimeOffset.ToString("O")``: seven fraction digits and a ``+HH:MM`` offset.

    Python keeps microseconds, so the seventh digit is always 0. A naive time is taken as UTC.

    Args:
        moment: The time to format.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    offset = moment.utcoffset()
    minutes = 0 if offset is None else int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond:06d}0{sign}{hours:02d}:{mins:02d}"


def build_activities(
    resolver: HistoryExportContextResolver,
) -> tuple[task.Activity[Any, Any], task.Activity[Any, Any]]:
    """``(list_terminal_instances, export_instance_history)`` bound to ``resolver``, under their registered names.

    Args:
        resolver: Called at each execution for the client and writer to use.
    """

    def list_terminal_instances(_: task.ActivityContext, input: Mapping[str, Any]) -> dict[str, Any]:
        return run_list_terminal_instances(resolver(), input)

    def export_instance_history(_: task.ActivityContext, input: Mapping[str, Any]) -> dict[str, Any]:
        return run_export_instance_history(resolver(), input)

    # The worker registers an activity under its function's name.
    list_terminal_instances.__name__ = LIST_TERMINAL_INSTANCES_ACTIVITY
    export_instance_history.__name__ = EXPORT_INSTANCE_HISTORY_ACTIVITY
    return list_terminal_instances, export_instance_history


def register(worker_instance: worker_module.TaskHubGrpcWorker, resolver: HistoryExportContextResolver) -> None:
    """Adds both activities to ``worker_instance``; ``resolver`` supplies the client and writer per execution.

    Args:
        worker_instance: The worker, not started yet.
        resolver: Called at each execution for the client and writer to use.
    """
    for activity in build_activities(resolver):
        worker_instance.add_activity(activity)


def build_list_activity_input(
    *,
    runtime_status_names: list[str] | None,
    completed_time_from: datetime,
    completed_time_to: datetime | None,
    page_size: int,
    continuation_token: str | None,
) -> dict[str, Any]:
    """The listing activity's input, as the orchestration builds it from the job's configuration.

    Args:
        runtime_status_names: :class:`OrchestrationStatus` names to keep; every terminal status when ``None``.
        completed_time_from: The start of the completion-time window.
        completed_time_to: The end of the window; open-ended when ``None``.
        page_size: At most this many IDs per page.
        continuation_token: The token of the page to read; the first page when ``None``.
    """
    return {
        "runtime_status": runtime_status_names,
        "completed_time_from": completed_time_from.isoformat(),
        "completed_time_to": None if completed_time_to is None else completed_time_to.isoformat(),
        "page_size": page_size,
        "continuation_token": continuation_token,
    }


__all__ = [
    "EXPORT_INSTANCE_HISTORY_ACTIVITY",
    "LIST_TERMINAL_INSTANCES_ACTIVITY",
    "HistoryExportContext",
    "HistoryExportContextResolver",
    "blob_name_for",
    "build_activities",
    "build_list_activity_input",
    "dotnet_round_trip",
    "register",
    "run_export_instance_history",
    "run_list_terminal_instances",
]
