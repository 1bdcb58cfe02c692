"""The worker's entity runner: operations in order, per-operation rollback, both request shapes, class entities."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest
from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.entity_batches import as_batch
from durabletask._worker.entity_runner import EntityRunner
from durabletask.entities import DurableEntity, EntityContext, EntityInstanceId


def counter(ctx: EntityContext, value: Any) -> Any:
    total = ctx.get_state(int, 0)
    if ctx.operation == "add":
        ctx.set_state(total + value)
        ctx.signal_entity(EntityInstanceId("audit", "log"), "record", value)
        if value < 0:
            raise ValueError("negative amounts are not allowed")
        return total + value
    if ctx.operation == "reset":
        ctx.delete_state()
        return None
    if ctx.operation == "big":
        return "x" * (2 << 20)
    return total


@dataclass
class Wallet:
    owner: str
    coins: int


class Purse(DurableEntity):
    def fill(self, wallet: Wallet) -> int:
        self.set_state(wallet)
        return wallet.coins

    def coins(self) -> int:
        wallet = self.get_state(Wallet)
        return wallet.coins if wallet is not None else 0

    def Shout(self) -> str:  # operation names match case-insensitively
        return "hey"

    def spawn(self, name: str) -> str:
        return self.schedule_new_orchestration(name, input={"from": str(self.entity_context.entity_id)},
                                               instance_id="child-1")

    async def later(self, value: int) -> int:
        return value + 1

    def _secret(self) -> str:
        return "never"


def make_runner(**entities: Any) -> EntityRunner:
    registry = Registry()
    for name, entity in entities.items():
        registry.add_entity(entity, name)
    return EntityRunner(registry)


def batch(instance_id: str, *operations: tuple[str, Any], state: Any = None) -> pb.EntityBatchRequest:
    request = pb.EntityBatchRequest(instanceId=instance_id)
    if state is not None:
        request.entityState.value = json.dumps(state)
    for i, (name, value) in enumerate(operations):
        operation = pb.OperationRequest(operation=name, requestId=f"r{i}")
        if value is not None:
            operation.input.value = json.dumps(value)
        request.operations.append(operation)
    return request


def outcomes(result: pb.EntityBatchResult) -> list[Any]:
    out: list[Any] = []
    for r in result.results:
        if r.HasField("failure"):
            out.append(("failed", r.failure.failureDetails.errorType, r.failure.failureDetails.errorMessage))
        else:
            out.append(json.loads(r.success.result.value) if r.success.HasField("result") else None)
    return out


def state_of(result: pb.EntityBatchResult) -> Any:
    return json.loads(result.entityState.value) if result.HasField("entityState") else None


def test_operations_run_in_order_on_one_state() -> None:
    result = make_runner(counter=counter).run(batch("@counter@k", ("add", 2), ("add", 3), ("get", None), state=10),
                                              [], "tok")
    assert outcomes(result) == [12, 15, 15]
    assert state_of(result) == 15
    assert result.completionToken == "tok"
    assert [a.sendSignal.input.value for a in result.actions] == ["2", "3"]
    assert result.actions[0].sendSignal.instanceId == "@audit@log"


def test_a_failing_operation_rolls_back_only_its_own_changes() -> None:
    result = make_runner(counter=counter).run(batch("@counter@k", ("add", 1), ("add", -50), ("add", 2)), [], "t")
    first, failed, third = outcomes(result)
    assert (first, third) == (1, 3)
    assert failed[:2] == ("failed", "builtins.ValueError")
    assert "negative amounts" in failed[2]
    assert state_of(result) == 3
    # The failed operation's signal is discarded with its state change.
    assert [a.sendSignal.input.value for a in result.actions] == ["1", "2"]
    timing = result.results[1].failure
    assert timing.endTimeUtc.ToDatetime() >= timing.startTimeUtc.ToDatetime()


def test_deleting_the_state_sends_none_back() -> None:
    result = make_runner(counter=counter).run(batch("@counter@k", ("reset", None), state=7), [], "t")
    assert not result.HasField("entityState")


def test_an_output_over_the_payload_limit_fails_that_operation() -> None:
    result = make_runner(counter=counter).run(batch("@counter@k", ("add", 1), ("big", None)), [], "t")
    assert outcomes(result)[0] == 1
    assert outcomes(result)[1][1] == "durabletask._errors.PayloadTooLargeError"
    assert state_of(result) == 1


def test_the_history_event_shape_runs_the_same_and_keeps_operation_infos() -> None:
    called = pb.EntityOperationCalledEvent(requestId="c1", operation="add", input=wrappers_pb2.StringValue(value="4"),
                                           parentInstanceId=wrappers_pb2.StringValue(value="orch-1"))
    signaled = pb.EntityOperationSignaledEvent(requestId="s1", operation="add",
                                               input=wrappers_pb2.StringValue(value="1"))
    request = pb.EntityRequest(instanceId="@counter@k", entityState=wrappers_pb2.StringValue(value="10"),
                               operationRequests=[pb.HistoryEvent(entityOperationSignaled=signaled),
                                                  pb.HistoryEvent(entityOperationCalled=called)])
    converted, infos = as_batch(pb.WorkItem(entityRequestV2=request))
    result = make_runner(counter=counter).run(converted, infos, "t2")
    assert outcomes(result) == [11, 15]
    assert [i.requestId for i in result.operationInfos] == ["s1", "c1"]
    assert result.operationInfos[1].responseDestination.instanceId == "orch-1"


def test_class_entity_operations_with_and_without_input_and_typed_state() -> None:
    runner = make_runner(purse=Purse)
    result = runner.run(batch("@purse@p", ("fill", {"owner": "ann", "coins": 5}), ("coins", None),
                              ("shout", None), ("later", 1)), [], "t")
    assert outcomes(result) == [5, 5, "hey", 2]
    assert state_of(result) == {"owner": "ann", "coins": 5}


def test_class_entity_rejects_unknown_private_and_helper_operations() -> None:
    result = make_runner(purse=Purse).run(
        batch("@purse@p", ("missing", None), ("_secret", None), ("get_state", None), ("coins", 3)), [], "t")
    missing, secret, helper, extra = outcomes(result)
    assert "has no operation named 'missing'" in missing[2]
    assert "has no operation named '_secret'" in secret[2]
    assert "has no operation named 'get_state'" in helper[2]
    assert "takes no input" in extra[2]


def test_class_entity_delete_and_start_orchestration() -> None:
    result = make_runner(purse=Purse).run(batch("@purse@p", ("spawn", "greeter"), ("delete", None),
                                                state={"owner": "x", "coins": 1}), [], "t")
    assert outcomes(result) == ["child-1", None]
    assert not result.HasField("entityState")
    (action,) = result.actions
    start = action.startNewOrchestration
    assert (start.name, start.instanceId, json.loads(start.input.value)) == ("greeter", "child-1", {"from": "@purse@p"})


def test_reading_the_state_as_the_wrong_type_fails_the_operation() -> None:
    def reader(ctx: EntityContext, _: Any) -> Any:
        return ctx.get_state(int)

    result = make_runner(reader=reader).run(batch("@reader@r", ("get", None), state="text"), [], "t")
    # As Microsoft's StateShim: the raw value is not the type asked for.
    assert outcomes(result)[0][:2] == ("failed", "builtins.TypeError")


def test_context_exposes_identity_operation_and_input() -> None:
    seen: dict[str, Any] = {}

    def probe(ctx: EntityContext, value: Any) -> None:
        seen.update(id=ctx.entity_id, op=ctx.operation, input=ctx.input, typed=ctx.get_input(dict),
                    orchestration_id=ctx.orchestration_id, has_state=ctx.has_state)
        ctx.signal_entity("@probe@other", "ping", signal_time=datetime(2030, 1, 1, tzinfo=timezone.utc))

    result = make_runner(probe=probe).run(batch("@probe@x", ("look", {"a": 1})), [], "t")
    assert seen == {"id": EntityInstanceId("probe", "x"), "op": "look", "input": {"a": 1}, "typed": {"a": 1},
                    "orchestration_id": "@probe@x", "has_state": False}
    assert result.actions[0].sendSignal.scheduledTime.ToDatetime() == datetime(2030, 1, 1)


def test_an_entity_missing_from_the_registry_fails_each_operation() -> None:
    result = make_runner().run(batch("@ghost@g", ("a", None), ("b", None)), [], "t")
    assert [o[1] for o in outcomes(result)] == ["durabletask.worker.EntityNotRegisteredError"] * 2


def test_a_malformed_entity_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="@name@key"):
        make_runner(counter=counter).run(batch("counter", ("get", None)), [], "t")
