"""Held entity reads on the embedded emulator: a GetEntity that waits for a change, and what a hostile caller gets."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import empty_pb2

from dtscale_emulator.dispatch import entity_waits
from durabletask import entities, task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._protocol_extensions import ENTITY_VERSION, ENTITY_WAIT_INSTANCE, ENTITY_WAIT_MS

from .conftest import Hub, unique_id


def tally(ctx: entities.EntityContext, amount: Any) -> None:
    ctx.set_state((ctx.get_state() or 0) + int(amount))


def idle(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.wait_for_external_event("go")
    return "done"


def speaker(ctx: task.ActivityContext, count: int) -> int:
    for i in range(count):
        ctx.publish(i)
    return count


def announcer(ctx: task.OrchestrationContext, count: int) -> Any:
    ctx.publish("begin")
    yield ctx.wait_for_external_event("go")
    return (yield ctx.call_activity(speaker, input=count))


@pytest.fixture
def emulated(hub: Hub) -> Hub:
    if hub.server is None:
        pytest.skip("held reads are the embedded emulator's; other backends answer GetEntity at once")
    w = hub.worker()
    w.add_entity(tally)
    w.add_orchestrator(idle)
    w.add_orchestrator(announcer)
    w.add_activity(speaker)
    w.start()
    return hub


@pytest.fixture
def stub(emulated: Hub) -> Iterator[pb_grpc.TaskHubSidecarServiceStub]:
    with grpc.insecure_channel(emulated.address) as channel:
        yield pb_grpc.TaskHubSidecarServiceStub(channel)


def _held(hub: Hub, wait: str, seen: str | None = None, instance_id: str | None = None) -> list[tuple[str, str]]:
    metadata = [*hub.metadata, (ENTITY_WAIT_MS, wait)]
    if seen is not None:
        metadata.append((ENTITY_VERSION, seen))
    if instance_id is not None:
        metadata.append((ENTITY_WAIT_INSTANCE, instance_id))
    return metadata


def _get(
    stub: pb_grpc.TaskHubSidecarServiceStub, entity_id: str, metadata: list[tuple[str, str]], timeout: float = 60
) -> tuple[pb.GetEntityResponse, str | None]:
    response, call = stub.GetEntity.with_call(
        pb.GetEntityRequest(instanceId=entity_id, includeState=True), metadata=metadata, timeout=timeout
    )
    versions = [value for key, value in call.trailing_metadata() or () if key == ENTITY_VERSION]
    return response, (versions[-1] if versions else None)


def _signal(hub: Hub, entity_id: str, amount: int) -> None:
    hub.client().signal_entity(entities.EntityInstanceId.parse(entity_id), "add", amount)


def _await_state(stub: pb_grpc.TaskHubSidecarServiceStub, hub: Hub, entity_id: str, state: str) -> str:
    """The version of the entity once its state is ``state`` (held reads carry it forward)."""
    response, version = _get(stub, entity_id, _held(hub, "0"))
    while not (response.exists and response.entity.serializedState.value == state):
        assert version is not None
        response, version = _get(stub, entity_id, _held(hub, "5000", version))
    assert version is not None
    return version


def _held_now(hub: Hub) -> int:
    """Reads of this test's task hub held on the server now (other tests' hubs do not count)."""
    assert hub.server is not None
    return hub.server.dispatcher.entity_waits.held_in(hub.taskhub)


def _until(condition: Any) -> None:
    """Waits until ``condition()`` holds (a hang guard of 60 s fails the test instead of hanging it)."""
    event = threading.Event()
    for _ in range(6000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never held")


def test_a_held_read_answers_when_the_entity_changes(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    entity_id = f"@tally@{unique_id('held')}"
    _signal(emulated, entity_id, 1)
    version = _await_state(stub, emulated, entity_id, "1")
    answers: list[tuple[pb.GetEntityResponse, str | None]] = []
    reader = threading.Thread(target=lambda: answers.append(_get(stub, entity_id, _held(emulated, "30000", version))))
    reader.start()
    _until(lambda: _held_now(emulated) == 1)  # held on the server, not answered
    assert not answers
    _signal(emulated, entity_id, 2)
    reader.join(60)
    ((response, new_version),) = answers
    assert response.entity.serializedState.value == "3"
    assert new_version not in (None, version)
    assert _held_now(emulated) == 0


def test_a_held_read_of_an_unchanged_entity_answers_when_its_wait_is_over(
    emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub
) -> None:
    entity_id = f"@tally@{unique_id('held')}"
    _signal(emulated, entity_id, 5)
    version = _await_state(stub, emulated, entity_id, "5")
    response, again = _get(stub, entity_id, _held(emulated, "50", version))
    assert response.entity.serializedState.value == "5"
    assert again == version


def test_a_held_read_of_an_entity_that_does_not_exist_waits_for_its_first_state(
    emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub
) -> None:
    entity_id = f"@tally@{unique_id('held')}"
    response, version = _get(stub, entity_id, _held(emulated, "0"))
    assert not response.exists and version == "none"
    answers: list[tuple[pb.GetEntityResponse, str | None]] = []
    reader = threading.Thread(target=lambda: answers.append(_get(stub, entity_id, _held(emulated, "30000", version))))
    reader.start()
    _until(lambda: _held_now(emulated) == 1)
    _signal(emulated, entity_id, 7)
    reader.join(60)
    assert answers[0][0].entity.serializedState.value == "7"


def test_the_end_of_the_named_instance_ends_a_held_read(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    c = emulated.client()
    instance_id = c.schedule_new_orchestration(idle, instance_id=unique_id("ends"))
    c.wait_for_orchestration_start(instance_id, timeout=60)
    entity_id = f"@tally@{instance_id}"
    _response, version = _get(stub, entity_id, _held(emulated, "0"))
    answers: list[tuple[pb.GetEntityResponse, str | None]] = []
    metadata = _held(emulated, "30000", version, instance_id)
    reader = threading.Thread(target=lambda: answers.append(_get(stub, entity_id, metadata)))
    reader.start()
    _until(lambda: _held_now(emulated) == 1)
    c.raise_orchestration_event(instance_id, "go")
    reader.join(60)
    assert answers and answers[0][1] == version  # unchanged entity, answered because the instance ended


@pytest.mark.timeout(20)  # a hang guard: held, the read below would wait 30 s
@pytest.mark.parametrize("ended", [True, False])
def test_a_held_read_naming_an_instance_that_has_ended_or_does_not_exist_is_answered_at_once(
    emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub, ended: bool
) -> None:
    instance_id = unique_id("over")
    if ended:
        c = emulated.client()
        c.schedule_new_orchestration(idle, instance_id=instance_id)
        c.wait_for_orchestration_start(instance_id, timeout=15)
        c.raise_orchestration_event(instance_id, "go")
        c.wait_for_orchestration_completion(instance_id, timeout=15)
    entity_id = f"@tally@{instance_id}"
    _response, version = _get(stub, entity_id, _held(emulated, "0"))
    _response, again = _get(stub, entity_id, _held(emulated, "30000", version, instance_id), timeout=60)
    assert again == version


def test_a_plain_get_entity_carries_no_version(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    _response, version = _get(stub, f"@tally@{unique_id('plain')}", emulated.metadata)
    assert version is None


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("wait", "named"),
    [
        ("-5", ENTITY_WAIT_MS),
        ("abc", ENTITY_WAIT_MS),
        ("1.5", ENTITY_WAIT_MS),
        ("1" * 13, ENTITY_WAIT_MS),
        ("", ENTITY_WAIT_MS),
    ],
)
def test_a_malformed_wait_is_refused_naming_the_key(
    emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub, wait: str, named: str
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        _get(stub, f"@tally@{unique_id('bad')}", _held(emulated, wait, "x"))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert named in (raised.value.details() or "")


@pytest.mark.adversarial
def test_an_over_long_version_or_instance_is_refused(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    for metadata in (_held(emulated, "10", "v" * 65), _held(emulated, "10", "v", "i" * 1025)):
        with pytest.raises(grpc.RpcError) as raised:
            _get(stub, f"@tally@{unique_id('bad')}", metadata)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "over the limit" in (raised.value.details() or "")


@pytest.mark.adversarial
def test_a_huge_wait_is_cut_to_the_callers_deadline(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    entity_id = f"@tally@{unique_id('huge')}"
    _, version = _get(stub, entity_id, _held(emulated, "0"))
    # Twelve digits of milliseconds (decades): the server answers before the call's 2-second deadline instead.
    response, again = _get(stub, entity_id, _held(emulated, "9" * 12, version), timeout=2)
    assert not response.exists and again == version
    assert _held_now(emulated) == 0


@pytest.mark.adversarial
def test_cancelled_held_reads_leave_nothing_held(emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    entity_id = f"@tally@{unique_id('gone')}"
    _, version = _get(stub, entity_id, _held(emulated, "0"))
    request = pb.GetEntityRequest(instanceId=entity_id, includeState=True)
    calls = [stub.GetEntity.future(request, metadata=_held(emulated, "30000", version), timeout=60) for _ in range(20)]
    _until(lambda: _held_now(emulated) == 20)
    for call in calls:
        call.cancel()
    _until(lambda: _held_now(emulated) == 0)


@pytest.mark.adversarial
def test_many_held_reads_stall_no_one_and_all_wake_on_one_change(emulated: Hub) -> None:
    entity_id = f"@tally@{unique_id('many')}"
    count = 300

    async def scenario() -> list[str | None]:
        async with grpc.aio.insecure_channel(emulated.address) as channel:
            aio_stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            request = pb.GetEntityRequest(instanceId=entity_id, includeState=True)
            first = aio_stub.GetEntity(request, metadata=_held(emulated, "0"), timeout=60)
            await first
            version = dict(await first.trailing_metadata())[ENTITY_VERSION]
            calls = [
                aio_stub.GetEntity(request, metadata=_held(emulated, "30000", version), timeout=60)
                for _ in range(count)
            ]
            while _held_now(emulated) < count:
                await asyncio.sleep(0.01)
            # Everyone else is served while they are held.
            await aio_stub.Hello(empty_pb2.Empty(), metadata=emulated.metadata, timeout=60)
            await asyncio.to_thread(_signal, emulated, entity_id, 1)
            answers = await asyncio.gather(*calls)
            assert all(a.exists and a.entity.serializedState.value == "1" for a in answers)
            return [dict(await call.trailing_metadata()).get(ENTITY_VERSION) for call in calls]

    versions = asyncio.run(scenario())
    assert len(set(versions)) == 1 and versions[0] not in (None, "none")
    assert _held_now(emulated) == 0


@pytest.mark.adversarial
def test_past_the_cap_reads_are_answered_unheld(
    emulated: Hub, stub: pb_grpc.TaskHubSidecarServiceStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entity_waits, "MAX_WAITERS", 2)
    entity_id = f"@tally@{unique_id('cap')}"
    _, version = _get(stub, entity_id, _held(emulated, "0"))
    request = pb.GetEntityRequest(instanceId=entity_id, includeState=True)
    calls = [stub.GetEntity.future(request, metadata=_held(emulated, "30000", version), timeout=60) for _ in range(2)]
    _until(lambda: _held_now(emulated) == 2)
    # The third is answered at once, without a version: its caller polls, as against a backend without held reads.
    _response, third = _get(stub, entity_id, _held(emulated, "30000", version))
    assert third is None
    for call in calls:
        call.cancel()
    _until(lambda: _held_now(emulated) == 0)


def _announced(hub: Hub, held_reads_seen: bool, use_async: bool = False) -> list[Any]:
    c = hub.client()
    instance_id = c.schedule_new_orchestration(announcer, input=5, instance_id=unique_id("announce"))
    items: list[Any] = []

    async def consume() -> None:
        async with hub.async_client() as ac:
            async for item in ac.subscribe(instance_id, timeout=60):
                items.append(item.data)

    if use_async:
        reader = threading.Thread(target=lambda: asyncio.run(consume()))
    else:
        reader = threading.Thread(target=lambda: items.extend(i.data for i in c.subscribe(instance_id, timeout=60)))
    reader.start()
    _until(lambda: items == ["begin"])
    if held_reads_seen:
        _until(lambda: _held_now(hub) == 1)  # the subscriber waits on the server for the next change
    c.raise_orchestration_event(instance_id, "go")
    reader.join(60)
    return items


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_subscriber_waits_with_a_held_read(emulated: Hub, use_async: bool) -> None:
    assert _announced(emulated, held_reads_seen=True, use_async=use_async) == ["begin", 0, 1, 2, 3, 4]


def test_a_subscriber_polls_when_its_reads_are_not_held(emulated: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entity_waits, "MAX_WAITERS", 0)  # every read answered at once, without a version
    assert _announced(emulated, held_reads_seen=False) == ["begin", 0, 1, 2, 3, 4]
    assert _held_now(emulated) == 0


@pytest.mark.adversarial
def test_a_subscriber_that_stops_reading_holds_nothing_on_the_server(emulated: Hub) -> None:
    c = emulated.client()
    instance_id = c.schedule_new_orchestration(announcer, input=200, instance_id=unique_id("stalled"))
    items = c.subscribe(instance_id, timeout=60)
    assert next(items).data == "begin"  # then it stops reading while the instance publishes 200 more
    c.raise_orchestration_event(instance_id, "go")
    c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert _held_now(emulated) == 0  # no read open for it: the items wait in the stream, not in a buffer for it
    assert [item.data for item in items] == list(range(200))
