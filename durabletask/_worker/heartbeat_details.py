"""Heartbeat details too long for an attempt's tag, read back from the orchestration's history.

The orchestration names the heartbeat that carried them (the task ID of the attempt that sent it, and which of
that attempt's heartbeats with details it was); its history holds the heartbeat as an external event, so the
next attempt's worker reads it there with ``StreamInstanceHistory``, a public RPC.
"""

from __future__ import annotations

from typing import Any

import grpc

from durabletask._errors import DurableTaskError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import activity_control as control
from durabletask._replay.controlled_activity import RepeatFilter, parse_control_event

#: The deadline of the history read; a retry that cannot read its details fails (and may be retried).
READ_TIMEOUT = 30.0


class HeartbeatDetailsError(DurableTaskError):
    """The details an attempt was to resume from could not be read from its orchestration's history."""


def find_details(events: Any, at: tuple[int, int]) -> str | None:
    """The details of the ``at[1]``-th heartbeat with details of task ``at[0]`` among ``events``, if present.

    Heartbeats are counted as the orchestration counted them: one recorded twice (sent again after a send that
    seemed to fail, with the same run and number) counts once.
    """
    task_id, ordinal = at
    seen = 0
    repeats = RepeatFilter()
    for event in events:
        if not event.HasField("eventRaised") or event.eventRaised.name != control.CONTROL_EVENT:
            continue
        report = parse_control_event(event.eventRaised.input.value)
        if report is None or report.seq != task_id or not repeats.fresh(report):
            continue
        if report.kind != "beat" or report.details is None:
            continue
        seen += 1
        if seen == ordinal:
            return report.details
    return None


def read_details(stub: Any, instance_id: str, execution_id: str, at: tuple[int, int]) -> str:
    """Read the details named by ``at`` from the history of ``instance_id``'s execution ``execution_id``.

    Raises:
        HeartbeatDetailsError: The history could not be read, or it holds no such heartbeat.
    """
    request = pb.StreamInstanceHistoryRequest(instanceId=instance_id)
    if execution_id:
        request.executionId.value = execution_id
    try:
        chunks = stub.StreamInstanceHistory(request, timeout=READ_TIMEOUT)
        details = find_details((event for chunk in chunks for event in chunk.events), at)
    except grpc.RpcError as error:
        raise HeartbeatDetailsError(
            f"the heartbeat details this attempt resumes from could not be read from the history of "
            f"'{instance_id}': {error.code().name}"
        ) from error
    if details is None:
        raise HeartbeatDetailsError(
            f"the history of '{instance_id}' holds no heartbeat #{at[1]} with details from task #{at[0]}"
        )
    return details
