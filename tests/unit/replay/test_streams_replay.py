"""An orchestrator's published items: one stream signal per live turn, none on replay, no shifted call IDs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._streams import wire

from .history import History, failed_with, kinds, registry, run


def greet(ctx: task.ActivityContext, name: str) -> str:
    return f"hello {name}"


def narrator(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish("one")
    ctx.publish({"n": 2}, topic="numbers")
    first = yield ctx.call_activity(greet, input="a")
    ctx.publish(first)
    second = yield ctx.call_activity(greet, input="b")
    return [first, second]


def _stream_actions(actions: list[pb.OrchestratorAction]) -> list[dict[str, Any]]:
    found = []
    for action in actions:
        if action.HasField("sendEntityMessage"):
            signaled = action.sendEntityMessage.entityOperationSignaled
            assert action.id == wire.ORCHESTRATOR_ACTION_ID
            assert signaled.targetInstanceId.value == str(wire.head_entity("abc"))
            assert signaled.operation == wire.APPEND
            found.append(json.loads(signaled.input.value))
    return found


def _first_turn() -> History:
    return History("abc").new().orchestrator_started().started("narrator", execution_id="e1")


def test_a_turn_sends_its_items_in_one_signal_beside_its_calls() -> None:
    result = run(_first_turn(), narrator)
    assert kinds(result) == ["scheduleTask", "sendEntityMessage"]
    assert result.actions[0].id == 1  # the call keeps the ID it has without publishing
    (batch,) = _stream_actions(result.actions)
    assert batch["s"] == 1 and batch["p"] == "o|e1"
    assert [(topic, data) for topic, data, _ in batch["items"]] == [("default", '"one"'), ("numbers", '{"n": 2}')]


def _after_first_turn() -> History:
    history = _first_turn()
    first = run(history, narrator)
    history.commit()
    history.orchestrator_completed()
    history.task_scheduled(1, "greet", "a")
    history.entity_message(wire.ORCHESTRATOR_ACTION_ID, first.actions[1].sendEntityMessage)
    return history


def test_replayed_turns_publish_nothing_and_the_next_batch_is_numbered_after_them() -> None:
    history = _after_first_turn().new().orchestrator_started().task_completed(1, "hello a")
    result = run(history, narrator)
    assert kinds(result) == ["scheduleTask", "sendEntityMessage"]
    assert result.actions[0].id == 2
    (batch,) = _stream_actions(result.actions)
    assert batch["s"] == 2
    assert [data for _, data, _ in batch["items"]] == ['"hello a"']


def test_a_turn_without_publishing_sends_no_signal() -> None:
    history = _after_first_turn().orchestrator_started().task_completed(1, "hello a")
    history.orchestrator_completed().task_scheduled(2, "greet", "b")
    history.new().orchestrator_started().task_completed(2, "hello b")
    result = run(history, narrator)
    assert kinds(result) == ["completeOrchestration"]


def test_a_kept_session_numbers_its_batches_on() -> None:
    executor = OrchestrationExecutor(registry(narrator))
    history = _first_turn()
    executor.execute("abc", history.old, history.new_events)
    resumed = executor.resume([History("abc").orchestrator_started().task_completed(1, "hello a").old[-1]])
    (batch,) = _stream_actions(resumed.actions)
    assert batch["s"] == 2


def too_big(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish("x" * (wire.MAX_ITEM_BYTES + 1))
    return None


def too_much_in_a_turn(ctx: task.OrchestrationContext, _: Any) -> Any:
    for _i in range(10):
        ctx.publish("x" * 60_000)
    return None


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("orchestrator", "message"),
    [(too_big, "over the limit of 65536 bytes per item"), (too_much_in_a_turn, "per orchestrator turn")],
)
def test_oversized_items_fail_at_publish(orchestrator: Any, message: str) -> None:
    result = run(History("abc").new().orchestrator_started().started(orchestrator.__name__), orchestrator)
    assert message in failed_with(result).errorMessage
    # What the orchestrator published before the refused item is its output, sent with the failing turn.
    published = [len(batch["items"]) for batch in _stream_actions(result.actions)]
    assert published == ([] if orchestrator is too_big else [8])


def reserved_topic(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish(1, topic="$dropped")
    return None


@pytest.mark.adversarial
def test_reserved_topics_are_refused() -> None:
    result = run(History("abc").new().orchestrator_started().started("reserved_topic"), reserved_topic)
    assert "reserved for stream markers" in failed_with(result).errorMessage
