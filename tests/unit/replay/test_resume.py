"""A live executor resumed with only new events (extended sessions), and the entity extension points."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.actions import PendingAction
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._replay.runtime import RuntimeContext
from durabletask._replay.tasks import CompletableTask

from .history import T0, History, completion, output, registry, run

steps: list[str] = []


def workflow(ctx: task.OrchestrationContext, _: Any) -> Any:
    steps.append("start")
    a = yield ctx.call_activity("a")
    steps.append(f"a={a}")
    yield ctx.create_timer(timedelta(minutes=1))
    steps.append("timer")
    event = yield ctx.wait_for_external_event("go")
    steps.append(f"go={event}")
    return [a, event]


def test_resuming_runs_each_step_once_and_matches_a_full_replay() -> None:
    steps.clear()
    executor = OrchestrationExecutor(registry(workflow))
    first = executor.execute("i", [], History("i").new().started("workflow").new_events)
    assert [a.scheduleTask.name for a in first.actions] == ["a"]

    second = executor.resume(History("i").new().orchestrator_started().task_completed(1, 7).new_events)
    assert [a.createTimer.fireAt.ToDatetime() for a in second.actions] == [T0 + timedelta(seconds=1, minutes=1)]

    fire = T0 + timedelta(seconds=1, minutes=1)
    assert executor.resume(History("i").new().orchestrator_started(fire).timer_fired(2, fire).new_events).actions == []
    last = executor.resume(History("i").new().orchestrator_started().event_raised("go", "yes").new_events)
    assert executor.is_complete
    assert steps == ["start", "a=7", "timer", "go=yes"]

    steps.clear()
    full = (
        History("i")
        .started("workflow")
        .task_scheduled(1, "a")
        .orchestrator_started()
        .task_completed(1, 7)
        .timer_created(2, fire)
        .orchestrator_started(fire)
        .timer_fired(2, fire)
        .new()
        .orchestrator_started()
        .event_raised("go", "yes")
    )
    assert run(full, workflow).actions == last.actions
    assert output(run(full, workflow)) == [7, "yes"]


def test_resume_accepts_confirmations_of_actions_sent_in_the_previous_batch() -> None:
    executor = OrchestrationExecutor(registry(workflow))
    executor.execute("i", [], History("i").new().started("workflow").new_events)
    again = executor.resume(
        History("i").new().task_scheduled(1, "a").orchestrator_started().task_completed(1, 1).new_events
    )
    assert [a.WhichOneof("orchestratorActionType") for a in again.actions] == ["createTimer"]


def test_resume_detects_a_confirmation_for_a_different_call() -> None:
    executor = OrchestrationExecutor(registry(workflow))
    executor.execute("i", [], History("i").new().started("workflow").new_events)
    result = executor.resume(History("i").new().task_scheduled(1, "b").new_events)
    assert completion(result).failureDetails.errorType == "durabletask.task.NonDeterminismError"


def test_resume_needs_a_live_unfinished_orchestration() -> None:
    from durabletask.task import OrchestrationStateError

    executor = OrchestrationExecutor(registry(workflow))
    with pytest.raises(OrchestrationStateError):
        executor.resume([])
    executor.execute("i", [], History("i").new().started("workflow").terminated().new_events)
    with pytest.raises(OrchestrationStateError):
        executor.resume([])


class CallEntity(PendingAction):
    __slots__ = ()
    event_kind = "entityOperationCalled"
    method = "call_entity"

    def to_proto(self) -> pb.OrchestratorAction:
        message = pb.SendEntityMessageAction(
            entityOperationCalled=pb.EntityOperationCalledEvent(requestId=str(self.id), operation=self.name)
        )
        return pb.OrchestratorAction(id=self.id, sendEntityMessage=message)


class FakeEntities:
    def __init__(self, rt: RuntimeContext) -> None:
        self.rt = rt

    def call_entity(
        self, entity: Any, operation: str, input: Any = None, *, return_type: type | None = None
    ) -> CompletableTask[Any]:
        result: CompletableTask[Any] = CompletableTask(return_type)
        self.rt.schedule(CallEntity(self.rt.next_sequence_id(), operation), result)
        return result

    def signal_entity(self, entity_id: Any, operation_name: str, input: Any = None, signal_time: Any = None) -> None:
        raise AssertionError("not used")

    def lock_entities(self, entities: list[Any]) -> CompletableTask[Any]:
        raise AssertionError("not used")

    def exit_critical_section(self) -> None:
        return None


def on_completed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    done = event.entityOperationCompleted
    waiting = rt.open.pop(int(done.requestId))
    waiting.complete(rt.codec.decode(done.output.value))
    rt.resume()


def test_entity_support_plugs_into_sequencing_and_dispatch() -> None:
    def counter(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_entity("counter@x", "get"))

    executor = OrchestrationExecutor(registry(counter), entity_support=FakeEntities)
    executor.handlers.register("entityOperationCompleted", on_completed)
    (sent,) = executor.execute("i", [], History("i").new().started("counter").new_events).actions
    assert sent.sendEntityMessage.entityOperationCalled.operation == "get"

    history = History("i").new().started("counter")
    history.new_events.append(
        pb.HistoryEvent(
            eventId=-1, entityOperationCompleted=pb.EntityOperationCompletedEvent(requestId="1", output={"value": "5"})
        )
    )
    assert output(executor.execute("i", [], history.new_events)) == 5


def test_every_history_event_kind_has_a_real_handler() -> None:
    # Entity events are handled by the entity support; no kind is left to a "not supported" placeholder.
    kinds = {f.name for f in pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["eventType"].fields}
    table = OrchestrationExecutor(registry()).handlers.table
    assert set(table) == kinds
    assert all(table[kind].__module__.startswith("durabletask._replay.") for kind in kinds)


def test_a_malformed_entity_id_fails_the_orchestration_clearly() -> None:
    def counter(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_entity("counter@x", "get"))

    details = completion(run(History().new().started("counter"), counter)).failureDetails
    assert details.errorType == "builtins.ValueError"
    assert "@name@key" in details.errorMessage


def test_a_handler_registered_on_one_executor_stays_there() -> None:
    # Tables start from handlers shared by every executor; a registration must change only its own table.
    first, second = OrchestrationExecutor(registry()), OrchestrationExecutor(registry())

    def custom(rt: Any, event: pb.HistoryEvent) -> None:
        return None

    first.handlers.register("timerFired", custom)
    assert first.handlers.table["timerFired"] is custom
    assert second.handlers.table["timerFired"] is not custom
    assert OrchestrationExecutor(registry()).handlers.table["timerFired"] is not custom
