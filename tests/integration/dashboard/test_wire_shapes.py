"""The dashboard's JSON has the shape the SDK's models gave it: the same instances, histories and entities read
both ways (the dashboard from the protocol's messages, the SDK's client from its own), field by field.

The expected side is how the pages were built from the SDK's models (its client states, history events and
entity metadata), so the browser code keeps reading what it always read, whichever SDK wrote the data.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from dtscale_emulator.dashboard import views
from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.dashboard.models import entity_row, history_entry, instance_row
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client, history, task, worker
from durabletask.entities import EntityContext, EntityInstanceId

TALLY = EntityInstanceId("tally", "k")


def work(ctx: task.ActivityContext, n: int) -> int:
    if n < 0:
        raise ValueError(f"negative: {n}")
    return n * 2


def tally(ctx: EntityContext, value: Any) -> int:
    if ctx.operation == "add":
        ctx.set_state(ctx.get_state(int, 0) + int(value))
    return ctx.get_state(int, 0)


def child(ctx: task.OrchestrationContext, value: int) -> int:
    return value


def everything(ctx: task.OrchestrationContext, _: Any) -> Any:
    """One of nearly every history event kind."""
    ctx.set_custom_status({"step": "start"})
    doubled = yield ctx.call_activity(work, input=2)
    retry = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=5), max_number_of_attempts=2)
    with contextlib.suppress(task.TaskFailedError):
        yield ctx.call_activity(work, input=-1, retry_policy=retry)
    yield ctx.create_timer(timedelta(milliseconds=5))
    copied = yield ctx.call_sub_orchestrator(child, input=doubled, instance_id=f"{ctx.instance_id}-child")
    ctx.signal_entity(TALLY, "add", 1)
    with (yield ctx.lock_entities([TALLY])):
        counted = yield ctx.call_entity(TALLY, "get")
    ctx.send_event(f"{ctx.instance_id}-child", "note", data="hi")
    approval = yield ctx.wait_for_external_event("go")
    return [doubled, copied, counted, approval]


def failing(ctx: task.OrchestrationContext, _: Any) -> None:
    raise RuntimeError("broken on purpose")


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    server = EmulatorServer(port=0, in_memory=True).start()
    w = worker.TaskHubGrpcWorker(host_address=server.address)
    for orchestrator in (everything, child, failing):
        w.add_orchestrator(orchestrator)
    w.add_activity(work)
    w.add_entity(tally)
    w.start()
    c = client.TaskHubGrpcClient(host_address=server.address)
    try:
        c.schedule_new_orchestration(everything, instance_id="all", tags={"team": "ops"}, input={"n": 1})
        c.wait_for_orchestration_start("all", timeout=30)
        c.suspend_orchestration("all", reason="a pause")
        c.resume_orchestration("all", reason="go on")
        c.raise_orchestration_event("all", "go", data=True)
        c.wait_for_orchestration_completion("all", timeout=30)
        c.schedule_new_orchestration(failing, instance_id="bad", version="1.2")
        c.wait_for_orchestration_completion("bad", timeout=30)
        start_at = datetime.now(timezone.utc) + timedelta(days=1)
        c.schedule_new_orchestration("nobody", instance_id="later", start_at=start_at)
        c.terminate_orchestration("later", output={"why": "not needed"})
        c.wait_for_orchestration_completion("later", timeout=30)
        c.schedule_new_orchestration(everything, instance_id="cut")
        c.wait_for_orchestration_start("cut", timeout=30)
        c.terminate_orchestration("cut", output="cut short", recursive=False)
        c.wait_for_orchestration_completion("cut", timeout=30)
        yield server.address
    finally:
        c.close()
        w.stop()
        server.close()


def sdk_plain(value: Any) -> Any:
    """How the pages turned the SDK's models into JSON."""
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: sdk_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): sdk_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sdk_plain(v) for v in value]
    return value


def sdk_history_row(event: history.HistoryEvent) -> tuple[str, dict[str, Any]]:
    fields = {k: v for k, v in sdk_plain(event).items() if k not in ("event_id", "timestamp") and v is not None}
    if isinstance(fields.get("orchestration_status"), int):
        fields["orchestration_status"] = client.OrchestrationStatus(fields["orchestration_status"]).name
    return type(event).__name__.removesuffix("Event"), fields


def sdk_failure(failure: Any) -> dict[str, Any] | None:
    if failure is None:
        return None
    inner = sdk_failure(failure.inner_failure)
    return {
        "error_type": failure.error_type,
        "message": failure.message,
        "stack_trace": failure.stack_trace,
        "inner": inner,
    }


def sdk_instance(state: client.OrchestrationState) -> dict[str, Any]:
    return {
        "instance_id": state.instance_id,
        "name": state.name,
        "version": state.version,
        "status": state.runtime_status.name,
        "tags": state.tags or {},
        "created_at": views.iso(state.created_at),
        "last_updated_at": views.iso(state.last_updated_at),
        "execution_id": state.execution_id,
        "input": state.serialized_input,
        "output": state.serialized_output,
        "custom_status": state.serialized_custom_status,
        "failure": sdk_failure(state.failure_details),
        "scheduled_start_at": views.iso(state.scheduled_start_at),
        "completed_at": views.iso(state.completed_at),
        "parent_instance_id": state.parent_instance_id,
        "fingerprint": dict(state._fingerprint_tags),
    }


def dashboard_reads(address: str, instance_id: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    async def read() -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        c = EndpointClient(address, "default")
        try:
            state = await c.get_instance(instance_id)
            assert state is not None
            entries = [history_entry(e) for e in await c.history(instance_id)]
        finally:
            await c.close()
        page = views.instance_json(instance_row(state), entries)
        shown = {k: v for k, v in page.items() if k not in ("children", "history", "timeline")}
        return shown, [(row["kind"], row["fields"]) for row in page["history"]]

    return aio_loop.run(read())


@pytest.mark.parametrize("instance_id", ["all", "all-child", "bad", "later", "cut"])
def test_instances_and_their_histories_read_as_the_sdk_reads_them(address: str, instance_id: str) -> None:
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        state = c.get_orchestration_state(instance_id)
        assert state is not None
        events = c.get_orchestration_history(instance_id)
    finally:
        c.close()
    shown, rows = dashboard_reads(address, instance_id)
    assert shown == sdk_instance(state)
    assert rows == [sdk_history_row(e) for e in events]


def test_the_history_covers_the_event_kinds(address: str) -> None:
    kinds = {kind for kind, _ in dashboard_reads(address, "all")[1]}
    assert {
        "ExecutionStarted", "ExecutionCompleted", "TaskScheduled", "TaskCompleted", "TaskFailed", "TimerCreated",
        "TimerFired", "SubOrchestrationInstanceCreated", "SubOrchestrationInstanceCompleted", "EventRaised",
        "EventSent", "ExecutionSuspended", "ExecutionResumed", "EntityOperationSignaled", "EntityOperationCalled",
        "EntityOperationCompleted", "EntityLockRequested", "EntityLockGranted", "EntityUnlockSent",
        "OrchestratorStarted",
    } <= kinds  # fmt: skip
    assert "ExecutionTerminated" in {kind for kind, _ in dashboard_reads(address, "cut")[1]}


def test_an_entity_reads_as_the_sdk_reads_it(address: str) -> None:
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        sdk = c.get_entity(TALLY, include_state=True)
    finally:
        c.close()
    assert sdk is not None

    async def read() -> dict[str, Any]:
        endpoint = EndpointClient(address, "default")
        try:
            found = await endpoint.get_entity(str(TALLY), include_state=True)
        finally:
            await endpoint.close()
        assert found is not None
        return views.entity_json(entity_row(found, include_state=True))

    assert aio_loop.run(read()) == {
        "id": str(sdk.id),
        "name": sdk.id.entity,
        "key": sdk.id.key,
        "last_modified": views.iso(sdk.last_modified),
        "backlog_queue_size": sdk.backlog_queue_size,
        "locked_by": sdk.get_locked_by() and str(sdk.get_locked_by()),
        "state": sdk.get_state(),
    }
