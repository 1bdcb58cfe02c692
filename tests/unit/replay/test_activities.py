"""Activities: scheduling, replay, results, failures, inputs, versions and payload limits."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from durabletask import task
from durabletask._errors import PayloadTooLargeError, ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor

from .history import History, completion, failed_with, failure, kinds, output, registry, run


def greet(ctx: task.ActivityContext, name: str) -> str:
    return f"hello {name}"


def chain(ctx: task.OrchestrationContext, names: list[str]) -> Any:
    results = []
    for name in names:
        results.append((yield ctx.call_activity(greet, input=name)))
    return results


def test_first_episode_schedules_the_first_activity_with_id_one() -> None:
    result = run(History().new().started("chain", ["a", "b"]), chain)
    assert len(result.actions) == 1
    action = result.actions[0]
    assert action.id == 1
    assert action.scheduleTask.name == "greet"
    assert action.scheduleTask.input.value == '"a"'
    assert not action.scheduleTask.HasField("version")
    assert result.encoded_custom_status is None


def test_replay_resumes_with_results_and_schedules_the_next_call() -> None:
    history = (History().started("chain", ["a", "b"]).task_scheduled(1, "greet").orchestrator_completed()
               .new().orchestrator_started().task_completed(1, "hello a"))
    result = run(history, chain)
    assert kinds(result) == ["scheduleTask"]
    assert result.actions[0].id == 2
    assert result.actions[0].scheduleTask.input.value == '"b"'


def test_orchestration_completes_with_the_collected_results() -> None:
    history = (History().started("chain", ["a", "b"]).task_scheduled(1, "greet")
               .orchestrator_started().task_completed(1, "hello a").task_scheduled(2, "greet")
               .new().orchestrator_started().task_completed(2, "hello b"))
    result = run(history, chain)
    assert kinds(result) == ["completeOrchestration"]
    assert output(result) == ["hello a", "hello b"]


def test_plain_function_orchestrator_completes_immediately() -> None:
    def double(ctx: task.OrchestrationContext, x: int) -> int:
        return x * 2

    assert output(run(History().new().started("double", 21), double)) == 42


def test_activity_failure_is_raised_into_the_orchestrator_as_task_failed_error() -> None:
    seen: list[task.FailureDetails] = []

    def guarded(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            yield ctx.call_activity("flaky")
        except task.TaskFailedError as error:
            seen.append(error.details)
            return "recovered"

    history = (History().started("guarded").task_scheduled(1, "flaky")
               .new().orchestrator_started().task_failed(1, failure("nope", "builtins.KeyError")))
    assert output(run(history, guarded)) == "recovered"
    assert seen[0].message == "nope"
    assert seen[0].is_caused_by(KeyError)
    assert not seen[0].is_caused_by(ValueError)


def test_unhandled_activity_failure_fails_the_orchestration_with_the_cause_inside() -> None:
    history = (History().started("chain", ["a"]).task_scheduled(1, "greet")
               .new().orchestrator_started().task_failed(1, failure("remote boom")))
    details = failed_with(run(history, chain))
    assert details.errorType == "durabletask.task.TaskFailedError"
    assert "remote boom" in details.errorMessage
    assert details.innerFailure.errorMessage == "remote boom"
    assert details.innerFailure.errorType == "builtins.ValueError"


def test_user_exception_fails_the_orchestration_with_type_message_and_stack() -> None:
    def broken(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity("a")
        raise RuntimeError("bad state")

    history = History().started("broken").task_scheduled(1, "a").new().orchestrator_started().task_completed(1)
    details = failed_with(run(history, broken))
    assert details.errorType == "builtins.RuntimeError"
    assert details.errorMessage == "bad state"
    assert "broken" in details.stackTrace.value


def test_unregistered_orchestrator_fails_with_the_compatible_error_type() -> None:
    details = failed_with(run(History().new().started("missing"), chain))
    assert details.errorType == "durabletask.worker.OrchestratorNotRegisteredError"
    assert "missing" in details.errorMessage


def test_history_without_execution_started_is_a_protocol_error() -> None:
    history = History().new().orchestrator_started().task_completed(1, 1)
    with pytest.raises(ProtocolError):
        run(history, chain)


def test_event_without_a_kind_is_a_protocol_error() -> None:
    history = History().new().started("chain", [])
    history.new_events.append(pb.HistoryEvent(eventId=5))
    with pytest.raises(ProtocolError, match="unknown kind"):
        run(history, chain)


def test_yielding_something_that_is_not_a_task_fails_the_orchestration() -> None:
    def odd(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield 42

    details = failed_with(run(History().new().started("odd"), odd))
    assert "yielded int" in details.errorMessage


def test_activities_inherit_the_orchestration_version_unless_given() -> None:
    def versioned(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield task.when_all([ctx.call_activity("a"), ctx.call_activity("b", version="9")])

    result = run(History().new().started("versioned", version="2.0"), versioned)
    assert [a.scheduleTask.version.value for a in result.actions] == ["2.0", "9"]


def test_tags_are_sent_with_the_activity() -> None:
    def tagged(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity("a", tags={"team": "x"})

    result = run(History().new().started("tagged"), tagged)
    assert dict(result.actions[0].scheduleTask.tags) == {"team": "x"}


def test_oversized_input_raises_at_the_call_site_and_can_be_handled() -> None:
    def big(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            ctx.call_activity("a", input="x" * (1024 * 1024 + 1))
        except PayloadTooLargeError as error:
            return f"refused {error.field}"
        return "sent"

    assert output(run(History().new().started("big"), big)) == "refused input of activity 'a'"


def test_oversized_output_fails_the_orchestration() -> None:
    def huge(ctx: task.OrchestrationContext, _: Any) -> str:
        return "y" * (1024 * 1024 + 10)

    details = failed_with(run(History().new().started("huge"), huge))
    assert "PayloadTooLargeError" in details.errorType


def test_sequence_ids_can_start_at_zero_for_histories_numbered_that_way() -> None:
    history = (History().started("chain", ["a", "b"]).task_scheduled(0, "greet")
               .new().orchestrator_started().task_completed(0, "hello a"))
    result = run(history, chain, first_sequence_id=0)
    assert [a.id for a in result.actions] == [1]


def test_results_are_decoded_from_json() -> None:
    got: list[Any] = []

    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        got.append((yield ctx.call_activity("a")))

    history = History().started("orch").task_scheduled(1, "a").new().orchestrator_started().task_completed(
        1, {"k": [1, 2]})
    run(history, orch)
    assert got == [{"k": [1, 2]}]


def test_executor_does_not_depend_on_the_worker_registry_beyond_lookup() -> None:
    executor = OrchestrationExecutor(registry(chain))
    first = executor.execute("i", [], History("i").new().started("chain", ["z"]).new_events)
    assert json.loads(first.actions[0].scheduleTask.input.value) == "z"
    assert completion(executor.execute("i", [], History("i").new().started("chain", []).new_events))


def test_tags_must_be_strings_and_are_checked_at_the_call_site() -> None:
    def tagged(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            ctx.call_activity("a", tags={"n": 1})  # type: ignore[dict-item]
        except TypeError as error:
            return str(error)
        return "accepted"

    assert "strings" in output(run(History().new().started("tagged"), tagged))


def test_an_action_the_wire_cannot_carry_fails_the_orchestration_instead_of_raising() -> None:
    def odd(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_sub_orchestrator("child", instance_id=42)  # type: ignore[arg-type]

    details = failed_with(run(History().new().started("odd"), odd))
    assert details.errorType == "builtins.TypeError"


def test_a_call_refused_after_taking_its_id_leaves_the_next_call_numbered_as_the_official_sdk_does() -> None:
    def refused(ctx: task.OrchestrationContext, _: Any) -> Any:
        with pytest.raises(TypeError, match="Failed to serialize object of type 'object' to JSON"):
            ctx.call_activity("a", input=object())
        return (yield ctx.call_activity("b"))

    result = run(History().new().started("refused"), refused)
    assert [(a.id, a.scheduleTask.name) for a in result.actions] == [(2, "b")]


@dataclasses.dataclass
class Point:
    x: int
    y: int


def typed_step(ctx: task.ActivityContext, value: int) -> Point:
    return Point(value, value)


class _UnhashableActivity:
    """A callable activity object that cannot be a cache key (it defines ``__eq__`` without ``__hash__``)."""

    __name__ = "unhashable"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _UnhashableActivity)

    def __call__(self, ctx: task.ActivityContext, value: int) -> int:
        return value


def test_activities_given_as_functions_or_unhashable_callables_are_scheduled_by_name_and_typed() -> None:
    def calls(ctx: task.OrchestrationContext, _: Any) -> Any:
        results = []
        for _ in range(2):  # the second round asks the same functions again
            results.append((yield ctx.call_activity(typed_step, input=1)))
            results.append((yield ctx.call_activity(_UnhashableActivity(), input=2)))
        return [repr(r) for r in results]

    history = History().started("calls")
    for round_start in (1, 3):
        history.task_scheduled(round_start, "typed_step", 1).orchestrator_started()
        history.task_completed(round_start, {"x": 1, "y": 1}).task_scheduled(round_start + 1, "unhashable", 2)
        history.orchestrator_started().task_completed(round_start + 1, 2)
    assert output(run(history.new().orchestrator_started(), calls)) == [repr(Point(1, 1)), "2"] * 2
    scheduled = run(History().started("calls").task_scheduled(1, "typed_step", 1).orchestrator_started()
                    .task_completed(1, {"x": 1, "y": 1}).new().orchestrator_started(), calls)  # fmt: skip
    assert [a.scheduleTask.name for a in scheduled.actions] == ["unhashable"]
