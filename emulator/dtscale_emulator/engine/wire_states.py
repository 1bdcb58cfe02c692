"""Conversions from stored records to the wire's OrchestrationState."""

from __future__ import annotations

from dtscale_emulator.engine import events
from dtscale_emulator.engine.entities import EntityView
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord


def orchestration_state(record: InstanceRecord, with_payloads: bool) -> pb.OrchestrationState:
    state = pb.OrchestrationState(
        instanceId=record.instance_id,
        name=record.name,
        version=events.sv(record.version),
        orchestrationStatus=record.status,  # type: ignore[arg-type]
        createdTimestamp=events.ts_micros(record.created_at),
        lastUpdatedTimestamp=events.ts_micros(record.updated_at),
        executionId=events.sv(record.execution_id),
        parentInstanceId=events.sv(record.parent_instance_id),
        tags=record.tags,
    )
    if record.custom_status is not None:
        state.customStatus.value = record.custom_status
    if record.completed_at is not None:
        state.completedTimestamp.CopyFrom(events.ts_micros(record.completed_at))
    if record.scheduled_start is not None:
        state.scheduledStartTimestamp.CopyFrom(events.ts_micros(record.scheduled_start))
    if record.failure is not None:
        state.failureDetails.ParseFromString(record.failure)
    if with_payloads:
        if record.input is not None:
            state.input.value = record.input
        if record.output is not None:
            state.output.value = record.output
    return state


def entity_metadata(view: EntityView, with_state: bool) -> pb.EntityMetadata:
    record = view.record
    metadata = pb.EntityMetadata(
        instanceId=record.instance_id,
        lastModifiedTime=events.ts_micros(record.modified_at),
        backlogQueueSize=view.backlog,
        lockedBy=events.sv(record.lock_owner),
    )
    if with_state and record.state is not None:
        metadata.serializedState.value = record.state
    return metadata
