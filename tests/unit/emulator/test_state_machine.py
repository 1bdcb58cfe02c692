"""The pure state machine: orchestrator responses in, history events, instance changes and outbox out."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest

from dtscale_emulator.engine import events
from dtscale_emulator.engine.state_machine import InstanceView, Transition, advance, open_children, status_after_events
from dtscale_emulator.protocol import StringValue, Timestamp, pb
from tests.conftest import fuzz_examples

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def _ids() -> itertools.count[int]:
    return itertools.count(1)


def _run(
    *actions: pb.OrchestratorAction,
    new: list[pb.HistoryEvent] | None = None,
    past: list[pb.HistoryEvent] | None = None,
    view: InstanceView | None = None,
    custom: str | None = None,
) -> Transition:
    counter = _ids()
    inst = view or InstanceView("i1", "e1", "Orch", "1.0", pb.ORCHESTRATION_STATUS_RUNNING)
    response = pb.OrchestratorResponse(instanceId=inst.instance_id, actions=list(actions))
    if custom is not None:
        response.customStatus.value = custom
    new_events = new if new is not None else [events.orchestrator_started(NOW)]
    return advance(inst, past or [], new_events, response, NOW, lambda: f"id{next(counter)}")


def _sv(v: str) -> StringValue:
    return StringValue(value=v)


def _kinds(evts: list[pb.HistoryEvent]) -> list[str | None]:
    return [e.WhichOneof("eventType") for e in evts]


def _complete(status: int, result: str | None = None, action_id: int = 9) -> pb.OrchestratorAction:
    done = pb.CompleteOrchestrationAction(orchestrationStatus=status)  # type: ignore[arg-type]
    if result is not None:
        done.result.value = result
    return pb.OrchestratorAction(id=action_id, completeOrchestration=done)


def test_schedule_task_records_history_with_the_action_id_and_queues_an_activity() -> None:
    action = pb.OrchestratorAction(
        id=4, scheduleTask=pb.ScheduleTaskAction(name="Act", input=_sv("1"), tags={"k": "v"})
    )
    t = _run(action, custom='"busy"')
    assert _kinds(t.history) == ["orchestratorStarted", "taskScheduled"]  # DTS stores no orchestratorCompleted
    assert t.history[1].eventId == 4 and t.history[1].taskScheduled.name == "Act"
    (task,) = t.outbox.activities
    assert task.request.taskId == 4 and task.request.input.value == "1"
    assert task.request.orchestrationInstance.executionId.value == "e1"
    assert task.request.tags["k"] == "v"
    assert t.status == pb.ORCHESTRATION_STATUS_RUNNING and t.custom_status == '"busy"'
    assert not t.terminal


def test_create_timer_queues_a_timer_fired_event_due_at_fire_time() -> None:
    fire = Timestamp()
    fire.FromDatetime(NOW + timedelta(minutes=5))
    t = _run(pb.OrchestratorAction(id=2, createTimer=pb.CreateTimerAction(fireAt=fire)))
    assert t.history[1].timerCreated.fireAt == fire and t.history[1].eventId == 2
    (timer,) = t.outbox.timers
    assert timer.fire_at == NOW + timedelta(minutes=5)
    assert timer.event.timerFired.timerId == 2 and timer.event.timerFired.fireAt == fire


def test_sub_orchestration_carries_parent_info() -> None:
    sub = pb.CreateSubOrchestrationAction(instanceId="child", name="Child", version=_sv("2"), input=_sv("x"))
    t = _run(pb.OrchestratorAction(id=3, createSubOrchestration=sub))
    assert t.history[1].subOrchestrationInstanceCreated.instanceId == "child"
    (child,) = t.outbox.instances
    parent = child.started.executionStarted.parentInstance
    assert parent.taskScheduledId == 3 and parent.orchestrationInstance.instanceId == "i1"
    assert parent.orchestrationInstance.executionId.value == "e1" and parent.name.value == "Orch"
    assert child.started.executionStarted.version.value == "2" and child.parent_task_id == 3


def test_sub_orchestration_without_id_gets_a_generated_one() -> None:
    t = _run(pb.OrchestratorAction(id=3, createSubOrchestration=pb.CreateSubOrchestrationAction(name="Child")))
    assert t.outbox.instances[0].instance_id == "id1"


def test_send_event_records_event_sent_and_raises_on_the_target() -> None:
    send = pb.SendEventAction(instance=pb.OrchestrationInstance(instanceId="other"), name="go", data=_sv("7"))
    t = _run(pb.OrchestratorAction(id=5, sendEvent=send))
    assert t.history[1].eventSent.instanceId == "other"
    (msg,) = t.outbox.messages
    assert (
        msg.instance_id == "other" and msg.event.eventRaised.name == "go" and msg.event.eventRaised.input.value == "7"
    )


def test_completion_appends_execution_completed_last() -> None:
    t = _run(_complete(pb.ORCHESTRATION_STATUS_COMPLETED, '"r"'))
    assert _kinds(t.history) == ["orchestratorStarted", "executionCompleted"]
    assert t.history[-1].executionCompleted.result.value == '"r"'
    assert t.terminal and t.output == '"r"' and t.failure is None


def test_failed_completion_keeps_failure_details() -> None:
    action = _complete(pb.ORCHESTRATION_STATUS_FAILED)
    action.completeOrchestration.failureDetails.CopyFrom(pb.TaskFailureDetails(errorType="E", errorMessage="m"))
    t = _run(action)
    assert t.status == pb.ORCHESTRATION_STATUS_FAILED and t.failure is not None and t.failure.errorMessage == "m"
    assert t.history[-1].executionCompleted.failureDetails.errorMessage == "m"


def test_child_completion_notifies_the_parent_with_the_task_id() -> None:
    child = InstanceView(
        "c", "ce", "Child", None, pb.ORCHESTRATION_STATUS_RUNNING, parent_instance_id="p", parent_task_id=8
    )
    t = _run(_complete(pb.ORCHESTRATION_STATUS_COMPLETED, "42"), view=child)
    (notice,) = t.outbox.messages
    assert notice.instance_id == "p"
    assert notice.event.subOrchestrationInstanceCompleted.taskScheduledId == 8
    assert notice.event.subOrchestrationInstanceCompleted.result.value == "42"


def test_continue_as_new_starts_a_new_execution_with_carryover() -> None:
    action = _complete(pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW, "5")
    action.completeOrchestration.newVersion.value = "2.0"
    action.completeOrchestration.carryoverEvents.append(events.event_raised(NOW, "kept", None))
    t = _run(action)
    can = t.continue_as_new
    assert can is not None and not t.terminal
    assert can.execution_id == "id1" and can.version == "2.0" and can.input == "5"
    started = can.started.executionStarted
    assert started.orchestrationInstance.executionId.value == "id1" and started.input.value == "5"
    assert [e.eventRaised.name for e in can.carryover] == ["kept"]
    assert "executionCompleted" not in _kinds(t.history)


def test_termination_wins_and_recursion_targets_open_children() -> None:
    past = [
        events.event(NOW, 1, subOrchestrationInstanceCreated=pb.SubOrchestrationInstanceCreatedEvent(instanceId="c1")),
        events.event(NOW, 2, subOrchestrationInstanceCreated=pb.SubOrchestrationInstanceCreatedEvent(instanceId="c2")),
        events.event(
            NOW, subOrchestrationInstanceCompleted=pb.SubOrchestrationInstanceCompletedEvent(taskScheduledId=1)
        ),
    ]
    new = [events.orchestrator_started(NOW), events.terminated(NOW, '"stop"', recurse=True)]
    t = _run(pb.OrchestratorAction(id=3, scheduleTask=pb.ScheduleTaskAction(name="ignored")), new=new, past=past)
    assert t.status == pb.ORCHESTRATION_STATUS_TERMINATED and t.output == '"stop"'
    assert not t.outbox.activities
    assert [(x.instance_id, x.recurse) for x in t.outbox.terminations] == [("c2", True)]
    assert open_children(past) == ["c2"]


def test_suspend_and_resume_events_change_status() -> None:
    running = pb.ORCHESTRATION_STATUS_RUNNING
    assert status_after_events(running, [events.suspended(NOW, None)]) == pb.ORCHESTRATION_STATUS_SUSPENDED
    assert status_after_events(pb.ORCHESTRATION_STATUS_SUSPENDED, [events.resumed(NOW, None)]) == running
    started = events.execution_started(NOW, instance_id="i", execution_id="e", name="n", version=None, input=None)
    assert status_after_events(pb.ORCHESTRATION_STATUS_PENDING, [started]) == running


def test_terminate_action_targets_another_instance() -> None:
    action = pb.OrchestratorAction(
        id=1, terminateOrchestration=pb.TerminateOrchestrationAction(instanceId="x", recurse=True)
    )
    (term,) = _run(action).outbox.terminations
    assert (term.instance_id, term.recurse) == ("x", True)


def test_unsupported_actions_fail_the_orchestration_visibly() -> None:
    t = _run(pb.OrchestratorAction(id=1, sendEntityMessage=pb.SendEntityMessageAction()))
    assert t.status == pb.ORCHESTRATION_STATUS_FAILED
    assert t.failure is not None and "sendEntityMessage" in t.failure.errorMessage


def test_an_action_without_a_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown orchestrator action"):
        _run(pb.OrchestratorAction(id=1))


def test_rewind_action_supplies_the_replacement_history() -> None:
    clean = [events.orchestrator_started(NOW), events.rewound(NOW, "why")]
    t = _run(pb.OrchestratorAction(id=-1, rewindOrchestration=pb.RewindOrchestrationAction(newHistory=clean)))
    assert t.rewound_history == clean
    assert t.status == pb.ORCHESTRATION_STATUS_RUNNING and not t.terminal


def test_entity_messages_are_recorded_and_forwarded() -> None:
    signaled = pb.EntityOperationSignaledEvent(requestId="r", operation="add", targetInstanceId=_sv("@c@k"))
    t = _run(
        pb.OrchestratorAction(id=6, sendEntityMessage=pb.SendEntityMessageAction(entityOperationSignaled=signaled))
    )
    assert t.history[1].eventId == 6 and t.history[1].entityOperationSignaled == signaled
    assert [m.entityOperationSignaled.operation for m in t.outbox.entity_messages] == ["add"]


def test_any_mix_of_tasks_and_timers_keeps_action_ids_and_order() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=fuzz_examples(60), deadline=None)
    @given(st.lists(st.tuples(st.booleans(), st.integers(min_value=0, max_value=3600)), max_size=20))
    def check(plan: list[tuple[bool, int]]) -> None:
        actions = []
        for action_id, (is_task, seconds) in enumerate(plan, start=1):
            if is_task:
                actions.append(
                    pb.OrchestratorAction(id=action_id, scheduleTask=pb.ScheduleTaskAction(name=f"A{action_id}"))
                )
            else:
                fire = Timestamp()
                fire.FromDatetime(NOW + timedelta(seconds=seconds))
                actions.append(pb.OrchestratorAction(id=action_id, createTimer=pb.CreateTimerAction(fireAt=fire)))
        t = _run(*actions)
        middle = t.history[1:]
        assert [e.eventId for e in middle] == list(range(1, len(plan) + 1))
        assert [e.HasField("taskScheduled") for e in middle] == [is_task for is_task, _ in plan]
        assert [a.request.taskId for a in t.outbox.activities] == [i for i, (task, _) in enumerate(plan, 1) if task]
        assert [x.event.timerFired.timerId for x in t.outbox.timers] == [
            i for i, (task, _) in enumerate(plan, 1) if not task
        ]
        assert _kinds(t.history)[0] == "orchestratorStarted" and len(t.history) == len(plan) + 1

    check()
