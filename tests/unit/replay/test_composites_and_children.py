"""when_all / when_any, sub-orchestrations and events sent to other instances."""

from __future__ import annotations

from typing import Any

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._worker.options import VersioningOptions
from durabletask._worker.registry import WorkerRegistry

from .history import History, failed_with, failure, kinds, output, run


def fan_out(ctx: task.OrchestrationContext, n: int) -> Any:
    results = yield task.when_all([ctx.call_activity("work", input=i) for i in range(n)])
    return sum(results)


def test_when_all_schedules_every_task_in_one_episode() -> None:
    result = run(History().new().started("fan_out", 3), fan_out)
    assert [(a.id, a.scheduleTask.input.value) for a in result.actions] == [(1, "0"), (2, "1"), (3, "2")]


def test_when_all_waits_for_every_result_in_any_order() -> None:
    history = History().started("fan_out", 3)
    for i in range(1, 4):
        history.task_scheduled(i, "work")
    history.new().orchestrator_started().task_completed(3, 20).task_completed(1, 0)
    assert run(history, fan_out).actions == []
    history.task_completed(2, 10)
    assert output(run(history, fan_out)) == 30


def test_when_all_fails_with_the_first_failure_after_all_finish() -> None:
    history = History().started("fan_out", 2).task_scheduled(1, "work").task_scheduled(2, "work")
    history.new().orchestrator_started().task_failed(2, failure("second"))
    assert run(history, fan_out).actions == []
    history.task_completed(1, 1)
    assert "second" in failed_with(run(history, fan_out)).errorMessage


def test_when_all_of_nothing_completes_immediately() -> None:
    assert output(run(History().new().started("fan_out", 0), fan_out)) == 0


def test_when_all_keeps_duplicates_and_order() -> None:
    def dup(ctx: task.OrchestrationContext, _: Any) -> Any:
        a = ctx.call_activity("a")
        b = ctx.call_activity("b")
        return (yield task.when_all([a, b, a]))

    history = (History().started("dup").task_scheduled(1, "a").task_scheduled(2, "b")
               .new().orchestrator_started().task_completed(2, "B").task_completed(1, "A"))
    assert output(run(history, dup)) == ["A", "B", "A"]


def race(ctx: task.OrchestrationContext, _: Any) -> Any:
    first = ctx.call_activity("slow")
    second = ctx.call_activity("fast")
    winner = yield task.when_any([first, second])
    return [winner is second, winner.get_result()]


def test_when_any_completes_with_the_first_task() -> None:
    history = (History().started("race").task_scheduled(1, "slow").task_scheduled(2, "fast")
               .new().orchestrator_started().task_completed(2, "f").task_completed(1, "s"))
    assert output(run(history, race)) == [True, "f"]


def test_when_any_with_a_failed_first_task_returns_it() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        winner = yield task.when_any([ctx.call_activity("a"), ctx.call_activity("b")])
        return winner.is_failed

    history = (History().started("orch").task_scheduled(1, "a").task_scheduled(2, "b")
               .new().orchestrator_started().task_failed(1))
    assert output(run(history, orch)) is True


def parent(ctx: task.OrchestrationContext, _: Any) -> Any:
    named = ctx.call_sub_orchestrator("child", input=1, instance_id="kid-1", version="3", tags={"t": "v"})
    derived = ctx.call_sub_orchestrator("child", input=2)
    return (yield task.when_all([named, derived]))


def test_sub_orchestrations_carry_instance_id_version_input_and_tags() -> None:
    actions = run(History().new().started("parent"), parent).actions
    first, second = (a.createSubOrchestration for a in actions)
    assert (first.name, first.instanceId, first.version.value, first.input.value) == ("child", "kid-1", "3", "1")
    assert dict(first.tags) == {"t": "v"}
    assert second.instanceId == "abc123:0002"
    assert not second.HasField("version")


def test_sub_orchestration_results_and_failures_reach_the_parent() -> None:
    history = (History().started("parent").sub_created(1, "child", "kid-1").sub_created(2, "child", "abc123:0002")
               .new().orchestrator_started().sub_completed(2, "two").sub_completed(1, "one"))
    assert output(run(history, parent)) == ["one", "two"]

    history = (History().started("parent").sub_created(1, "child", "kid-1").sub_created(2, "child")
               .new().orchestrator_started().sub_failed(1, failure("child broke")).sub_completed(2))
    details = failed_with(run(history, parent))
    assert "Sub-orchestration task #1 failed: child broke" in details.errorMessage


def test_parent_instance_id_is_known_to_sub_orchestrations() -> None:
    def child(ctx: task.OrchestrationContext, _: Any) -> Any:
        return [ctx.parent_instance_id, ctx.instance_id]

    assert output(run(History("kid").new().started("child", parent="mom"), child)) == ["mom", "kid"]
    assert output(run(History("solo").new().started("child"), child)) == [None, "solo"]


def test_send_event_emits_an_action_without_a_task() -> None:
    def notify(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.send_event("other", "Ping", data={"n": 1})
        return "sent"

    result = run(History().new().started("notify"), notify)
    assert kinds(result) == ["sendEvent", "completeOrchestration"]
    sent = result.actions[0]
    assert sent.id == 1
    assert (sent.sendEvent.instance.instanceId, sent.sendEvent.name, sent.sendEvent.data.value) == (
        "other", "Ping", '{"n": 1}')


def test_send_event_is_confirmed_by_event_sent_on_replay() -> None:
    def notify(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.send_event("other", "Ping")
        yield ctx.call_activity("a")

    history = (History().started("notify").event_sent(1, "other", "Ping").task_scheduled(2, "a")
               .new().orchestrator_started())
    assert run(history, notify).actions == []


def test_completed_actions_come_before_the_completion_in_id_order() -> None:
    def busy(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.call_activity("fire-and-forget")
        ctx.send_event("x", "e")
        return 1

    result = run(History().new().started("busy"), busy)
    assert [a.id for a in result.actions] == [1, 2, 3]
    assert result.actions[-1].completeOrchestration.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED


def test_sub_orchestrations_default_to_the_worker_default_version() -> None:
    reg = WorkerRegistry()  # the executor reads the worker's versioning policy when the registry has one
    reg.add_orchestrator(parent)
    reg.versioning = VersioningOptions(version="5", default_version="4")
    actions = OrchestrationExecutor(reg).execute("p", [], History("p").new().started("parent").new_events).actions
    assert [a.createSubOrchestration.version.value for a in actions] == ["3", "4"]


def test_send_event_validates_its_target() -> None:
    def bad(ctx: task.OrchestrationContext, target: str) -> Any:
        try:
            ctx.send_event(target, "e")
        except ValueError as error:
            return str(error)
        return "sent"

    assert "empty" in output(run(History().new().started("bad", " "), bad))
    assert "entities" in output(run(History().new().started("bad", "@counter@x"), bad))


def forger(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_sub_orchestrator("child", tags={"durabletask.fingerprint.code": "forged"}))


def test_a_child_tag_with_the_reserved_fingerprint_prefix_fails_at_the_call() -> None:
    message = failed_with(run(History().new().started("forger"), forger)).errorMessage
    assert "durabletask.fingerprint.code" in message and "reserved" in message
