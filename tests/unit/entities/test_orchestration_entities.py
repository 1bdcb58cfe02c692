"""Entities from orchestrations in the replay executor: every entity event, the lock rules, and replay checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from durabletask import entities, task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import ExecutionResults
from durabletask.entities import EntityInstanceId, EntityLock
from tests.unit.replay.history import INSTANCE, T0, History, completion, failed_with, failure, kinds, output, run

A = EntityInstanceId("account", "a")
B = EntityInstanceId("account", "b")
COUNTER = EntityInstanceId("counter", "c1")


def messages(result: ExecutionResults) -> list[pb.SendEntityMessageAction]:
    return [a.sendEntityMessage for a in result.actions if a.HasField("sendEntityMessage")]


def message_kinds(result: ExecutionResults) -> list[str]:
    return [str(m.WhichOneof("EntityMessageType")) for m in messages(result)]


def advance(history: History, result: ExecutionResults) -> History:
    """Record the episode's entity messages as the backend would, and open the next episode."""
    history.commit()
    for action in result.actions:
        if action.HasField("sendEntityMessage"):
            history.entity_message(action.id, action.sendEntityMessage)
        elif action.HasField("scheduleTask"):
            history.task_scheduled(action.id, action.scheduleTask.name)
    history.orchestrator_completed()
    return history.new().orchestrator_started()


class Steps:
    """Runs an orchestrator episode by episode, feeding back what each episode sent."""

    def __init__(self, orchestrator: Callable[..., Any], input: Any = None) -> None:
        self.orchestrator = orchestrator
        self.history = History().new().started(task.get_name(orchestrator), input)
        self.last = self.run()

    def run(self) -> ExecutionResults:
        return run(self.history, self.orchestrator)

    def next(self, deliver: Callable[[History, ExecutionResults], Any]) -> ExecutionResults:
        previous = self.last
        advance(self.history, previous)
        deliver(self.history, previous)
        self.last = self.run()
        return self.last


def request_id(result: ExecutionResults, index: int = 0) -> str:
    calls = [m.entityOperationCalled for m in messages(result) if m.HasField("entityOperationCalled")]
    return str(calls[index].requestId)


def section_id(result: ExecutionResults) -> str:
    (lock,) = [m.entityLockRequested for m in messages(result) if m.HasField("entityLockRequested")]
    return str(lock.criticalSectionId)


# ---- call_entity and signal_entity ----------------------------------------------------------------

def call_counter(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.call_entity(COUNTER, "add", 5)
    return value


def test_call_entity_sends_the_call_and_resumes_with_the_result() -> None:
    steps = Steps(call_counter)
    (message,) = messages(steps.last)
    called = message.entityOperationCalled
    assert (called.operation, called.targetInstanceId.value, called.input.value) == ("add", "@counter@c1", "5")
    assert called.parentInstanceId.value == INSTANCE
    assert called.requestId
    assert kinds(steps.last) == ["sendEntityMessage"]  # waiting for the result
    result = steps.next(lambda h, r: h.entity_completed(request_id(r), 42))
    assert kinds(result) == ["completeOrchestration"]
    assert output(result) == 42


def test_call_entity_accepts_the_string_form_and_decodes_typed_results() -> None:
    @dataclass
    class Total:
        value: int

    def typed(ctx: task.OrchestrationContext, _: Any) -> Any:
        total = yield ctx.call_entity("@counter@c1", "get", return_type=Total)
        return total.value * 2

    steps = Steps(typed)
    assert messages(steps.last)[0].entityOperationCalled.targetInstanceId.value == "@counter@c1"
    assert output(steps.next(lambda h, r: h.entity_completed(request_id(r), {"value": 21}))) == 42


def test_request_ids_are_deterministic_and_distinct() -> None:
    def two(ctx: task.OrchestrationContext, _: Any) -> Any:
        results = yield task.when_all([ctx.call_entity(A, "balance"), ctx.call_entity(B, "balance")])
        return results

    first = run(History().new().started("two"), two)
    again = run(History().new().started("two"), two)
    assert request_id(first, 0) != request_id(first, 1)
    assert [request_id(first, i) for i in (0, 1)] == [request_id(again, i) for i in (0, 1)]


def test_results_match_calls_by_request_id_in_any_order() -> None:
    def two(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield task.when_all([ctx.call_entity(A, "balance"), ctx.call_entity(B, "balance")]))

    steps = Steps(two)

    def deliver(h: History, r: ExecutionResults) -> None:
        h.entity_completed(request_id(r, 1), "b").entity_completed(request_id(r, 0), "a")

    assert output(steps.next(deliver)) == ["a", "b"]


def test_failed_call_raises_entity_operation_failed_in_the_orchestrator() -> None:
    def catching(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            yield ctx.call_entity(A, "withdraw", 500)
        except task.TaskFailedError as error:
            return [str(error), error.details.error_type, error.details.inner_failure.error_type
                    if error.details.inner_failure else None]
        return "no error"

    steps = Steps(catching)
    details = failure("insufficient funds", "builtins.ValueError")
    message, error_type, inner = output(steps.next(lambda h, r: h.entity_failed(request_id(r), details)))
    assert message == "Operation 'withdraw' on entity '@account@a' failed with error: insufficient funds"
    assert error_type.endswith("EntityOperationFailedException")
    assert inner == "builtins.ValueError"


def test_uncaught_entity_failure_fails_the_orchestration() -> None:
    steps = Steps(call_counter)
    details = failed_with(steps.next(lambda h, r: h.entity_failed(request_id(r), failure("bad"))))
    assert "Operation 'add' on entity '@counter@c1' failed with error: bad" in details.errorMessage


def test_signal_entity_does_not_wait() -> None:
    def signal(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.signal_entity(COUNTER, "add", 1)
        ctx.signal_entity(A, "deposit", {"amount": 3})
        return "sent"

    result = run(History().new().started("signal"), signal)
    assert kinds(result) == ["sendEntityMessage", "sendEntityMessage", "completeOrchestration"]
    first, second = (m.entityOperationSignaled for m in messages(result))
    assert (first.operation, first.targetInstanceId.value, first.input.value) == ("add", "@counter@c1", "1")
    assert not first.HasField("scheduledTime")
    assert json.loads(second.input.value) == {"amount": 3}
    assert first.requestId != second.requestId
    assert output(result) == "sent"


def test_signal_with_a_scheduled_time_in_utc() -> None:
    def later(ctx: task.OrchestrationContext, _: Any) -> None:
        ctx.signal_entity(COUNTER, "add", 1, signal_time=ctx.current_utc_datetime + timedelta(minutes=5))
        ctx.signal_entity(COUNTER, "add", 2, signal_time=datetime(2030, 1, 1, 13, tzinfo=timezone(timedelta(hours=1))))

    first, second = (m.entityOperationSignaled for m in messages(run(History().new().started("later", at=T0), later)))
    assert first.scheduledTime.ToDatetime() == T0 + timedelta(minutes=5)
    assert second.scheduledTime.ToDatetime() == datetime(2030, 1, 1, 12)


def test_entity_messages_share_sequence_ids_with_other_calls() -> None:
    def mixed(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.call_activity("first")
        ctx.signal_entity(COUNTER, "add", 1)
        ctx.call_entity(COUNTER, "get")
        ctx.call_activity("last")
        yield ctx.create_timer(timedelta(hours=1))

    result = run(History().new().started("mixed"), mixed)
    assert [a.id for a in result.actions] == [1, 2, 3, 4, 5]
    assert kinds(result) == ["scheduleTask", "sendEntityMessage", "sendEntityMessage", "scheduleTask", "createTimer"]


# ---- critical sections ----------------------------------------------------------------------------

def transfer(ctx: task.OrchestrationContext, _: Any) -> Any:
    with (yield ctx.lock_entities([B, A, B])):
        yield ctx.call_entity(A, "withdraw", 5)
        yield ctx.call_entity(B, "deposit", 5)
    return "done"


def test_lock_request_is_sorted_and_deduplicated() -> None:
    result = run(History().new().started("transfer"), transfer)
    (message,) = messages(result)
    requested = message.entityLockRequested
    assert list(requested.lockSet) == ["@account@a", "@account@b"]
    assert requested.parentInstanceId.value == INSTANCE
    assert requested.criticalSectionId
    assert kinds(result) == ["sendEntityMessage"]


def test_critical_section_runs_and_releases_every_lock_on_exit() -> None:
    steps = Steps(transfer)
    section = section_id(steps.last)
    granted = steps.next(lambda h, r: h.lock_granted(section))
    assert message_kinds(granted) == ["entityOperationCalled"]
    deposited = steps.next(lambda h, r: h.entity_completed(request_id(r), 0))
    assert messages(deposited)[0].entityOperationCalled.targetInstanceId.value == "@account@b"
    done = steps.next(lambda h, r: h.entity_completed(request_id(r), 5))
    assert message_kinds(done) == ["entityUnlockSent", "entityUnlockSent"]
    unlocks = [m.entityUnlockSent for m in messages(done)]
    assert [u.targetInstanceId.value for u in unlocks] == ["@account@a", "@account@b"]
    assert {u.criticalSectionId for u in unlocks} == {section}
    assert output(done) == "done"
    # Replaying the whole history, unlock events included, gives nothing new but the completion.
    advance(steps.history, done)
    assert kinds(steps.run()) == ["completeOrchestration"]


def test_the_lock_task_yields_an_entity_lock() -> None:
    def holder(ctx: task.OrchestrationContext, _: Any) -> Any:
        lock = yield ctx.lock_entities([A])
        return type(lock).__name__

    steps = Steps(holder)
    result = steps.next(lambda h, r: h.lock_granted(section_id(r)))
    assert output(result) == EntityLock.__name__
    # Returning while still holding the lock releases it with the completion.
    assert message_kinds(result) == ["entityUnlockSent"]


def hold_then(ending: str) -> Callable[..., Any]:
    def holder(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.lock_entities([A, B])
        if ending == "fail":
            raise RuntimeError("crash inside the critical section")
        if ending == "continue":
            ctx.continue_as_new(1)
            return None
        yield ctx.wait_for_external_event("never")
        return None

    holder.__name__ = "holder"
    return holder


@pytest.mark.parametrize("ending", ["fail", "continue"])
def test_locks_are_released_when_the_execution_ends_inside_the_section(ending: str) -> None:
    steps = Steps(hold_then(ending))
    result = steps.next(lambda h, r: h.lock_granted(section_id(r)))
    assert message_kinds(result) == ["entityUnlockSent", "entityUnlockSent"]
    # The unlocks take their IDs before the ending does (lock request 1, unlocks 2 and 3, ending 4).
    assert [a.id for a in result.actions] == [2, 3, 4]
    expected = pb.ORCHESTRATION_STATUS_FAILED if ending == "fail" else pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
    assert completion(result).orchestrationStatus == expected


def test_locks_are_released_on_termination() -> None:
    steps = Steps(hold_then("wait"))
    result = steps.next(lambda h, r: h.lock_granted(section_id(r)).terminated("stop"))
    assert message_kinds(result) == ["entityUnlockSent", "entityUnlockSent"]
    assert [a.id for a in result.actions] == [2, 3, 4]
    assert completion(result).orchestrationStatus == pb.ORCHESTRATION_STATUS_TERMINATED


def test_a_pending_lock_request_is_released_too_when_the_execution_fails() -> None:
    steps = Steps(hold_then("wait"))
    result = steps.next(lambda h, r: h.terminated())
    assert message_kinds(result) == ["entityUnlockSent", "entityUnlockSent"]


def test_a_new_critical_section_after_leaving_the_first() -> None:
    def twice(ctx: task.OrchestrationContext, _: Any) -> Any:
        with (yield ctx.lock_entities([A])):
            pass
        with (yield ctx.lock_entities([B])):
            return (yield ctx.call_entity(B, "balance"))

    steps = Steps(twice)
    second = steps.next(lambda h, r: h.lock_granted(section_id(r)))
    assert message_kinds(second) == ["entityUnlockSent", "entityLockRequested"]
    called = steps.next(lambda h, r: h.lock_granted(section_id(r)))
    assert output(steps.next(lambda h, r: h.entity_completed(request_id(r), 9))) == 9
    assert message_kinds(called) == ["entityOperationCalled"]


# ---- misuse ---------------------------------------------------------------------------------------

def in_section(body: Callable[[task.OrchestrationContext], Any], locks: list[EntityInstanceId] | None = None,
               ) -> pb.TaskFailureDetails:
    def misuse(ctx: task.OrchestrationContext, _: Any) -> Any:
        with (yield ctx.lock_entities(locks or [A])):
            yield from body(ctx)

    steps = Steps(misuse)
    return failed_with(steps.next(lambda h, r: h.lock_granted(section_id(r))))


def test_calling_an_entity_that_is_not_locked_fails() -> None:
    def body(ctx: task.OrchestrationContext) -> Any:
        yield ctx.call_entity(COUNTER, "get")

    details = in_section(body)
    assert details.errorMessage == (
        "Must not call an entity from a critical section if it is not one of the locked entities."
    )
    assert details.errorType == "builtins.RuntimeError"


def test_calling_a_locked_entity_twice_at_once_fails() -> None:
    def body(ctx: task.OrchestrationContext) -> Any:
        yield task.when_all([ctx.call_entity(A, "balance"), ctx.call_entity(A, "balance")])

    assert "while a prior call to the same entity is still pending" in in_section(body).errorMessage


def test_signalling_a_locked_entity_fails() -> None:
    def body(ctx: task.OrchestrationContext) -> Any:
        ctx.signal_entity(A, "deposit", 1)
        yield ctx.call_entity(A, "balance")

    assert in_section(body).errorMessage == "Must not signal a locked entity from a critical section."


def test_signalling_an_unlocked_entity_inside_a_section_is_allowed() -> None:
    def body(ctx: task.OrchestrationContext) -> Any:
        ctx.signal_entity(COUNTER, "add", 1)
        yield ctx.call_entity(A, "balance")

    def misuse(ctx: task.OrchestrationContext, _: Any) -> Any:
        with (yield ctx.lock_entities([A])):
            yield from body(ctx)

    steps = Steps(misuse)
    assert message_kinds(steps.next(lambda h, r: h.lock_granted(section_id(r)))) == [
        "entityOperationSignaled", "entityOperationCalled"]


def test_nested_critical_sections_fail() -> None:
    def body(ctx: task.OrchestrationContext) -> Any:
        yield ctx.lock_entities([B])

    assert "Must not enter another critical section from within a critical section" in in_section(body).errorMessage


def test_calling_before_the_lock_is_granted_fails() -> None:
    def eager(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.lock_entities([A])
        yield ctx.call_entity(A, "balance")

    details = failed_with(run(History().new().started("eager"), eager))
    assert "Must await the completion of the lock request prior to calling any entity" in details.errorMessage


@pytest.mark.parametrize(("call", "message"), [
    (lambda ctx: ctx.lock_entities([]), "at least one entity"),
    (lambda ctx: ctx.lock_entities("@account@a"), "takes a list of entities"),
    (lambda ctx: ctx.call_entity("account@a", "get"), "must have the form '@name@key'"),
    (lambda ctx: ctx.call_entity(42, "get"), "EntityInstanceId or an '@name@key' string"),
    (lambda ctx: ctx.call_entity(A, ""), "operation name must be a non-empty string"),
    (lambda ctx: ctx.signal_entity(A, "x", signal_time="tomorrow"), "signal_time must be a datetime"),
])
def test_invalid_arguments_fail_with_a_clear_message(call: Callable[[Any], Any], message: str) -> None:
    def misuse(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield call(ctx)

    assert message in failed_with(run(History().new().started("misuse"), misuse)).errorMessage


# ---- unknown results ------------------------------------------------------------------------------

def test_results_for_unknown_requests_and_sections_are_ignored() -> None:
    steps = Steps(call_counter)
    result = steps.next(lambda h, r: h.entity_completed("someone-else", 1).lock_granted("no-such-section")
                        .entity_failed("another"))
    assert kinds(result) == []  # still waiting for its own result


# ---- non-determinism ------------------------------------------------------------------------------

def replay_with(recorded: Callable[..., Any], current: Callable[..., Any]) -> pb.TaskFailureDetails:
    steps = Steps(recorded)
    advance(steps.history, steps.last)
    current.__name__ = recorded.__name__
    return failed_with(run(steps.history, current))


def test_a_different_operation_is_non_deterministic() -> None:
    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_entity(COUNTER, "get"))

    details = replay_with(call_counter, now)
    assert details.errorType == "durabletask.task.NonDeterminismError"
    assert "call_entity('@counter@c1', 'add') with ID 1" in details.errorMessage
    assert "calls call_entity('@counter@c1', 'get')" in details.errorMessage


def test_a_different_entity_is_non_deterministic() -> None:
    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_entity(EntityInstanceId("counter", "other"), "add", 5))

    assert "NonDeterminismError" in replay_with(call_counter, now).errorType


def test_an_activity_instead_of_an_entity_call_is_non_deterministic() -> None:
    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("add"))

    assert "calls call_activity('add')" in replay_with(call_counter, now).errorMessage


def test_a_signal_instead_of_a_call_is_non_deterministic() -> None:
    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.signal_entity(COUNTER, "add", 5)
        yield ctx.create_timer(timedelta(hours=1))

    assert "calls signal_entity('@counter@c1', 'add')" in replay_with(call_counter, now).errorMessage


def test_a_missing_lock_request_is_non_deterministic() -> None:
    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.create_timer(timedelta(hours=1))

    details = replay_with(transfer, now)
    assert "lock_entities(['@account@a', '@account@b']) with ID 1" in details.errorMessage


def test_a_recorded_unlock_the_code_no_longer_sends_is_non_deterministic() -> None:
    steps = Steps(transfer)
    steps.next(lambda h, r: h.lock_granted(section_id(r)))
    steps.next(lambda h, r: h.entity_completed(request_id(r), 0))
    done = steps.next(lambda h, r: h.entity_completed(request_id(r), 5))
    advance(steps.history, done)

    def now(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.lock_entities([A, B])
        yield ctx.call_entity(A, "withdraw", 5)
        yield ctx.call_entity(B, "deposit", 5)
        yield ctx.create_timer(timedelta(hours=1))  # no longer leaves the section here

    now.__name__ = "transfer"
    assert "the release of the lock on '@account@a'" in failed_with(run(steps.history, now)).errorMessage


def test_the_task_module_still_exports_the_entity_types() -> None:
    # The compatible API's durabletask.task exported these; they are durabletask.entities' classes.
    for name in ("DurableEntity", "EntityContext", "EntityInstanceId", "EntityLock"):
        assert getattr(task, name) is getattr(entities, name)
