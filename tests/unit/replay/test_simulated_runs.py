"""Property tests: random orchestrations driven by a simulated backend, replayed from scratch and resumed.

Each episode, a fresh executor replays the whole history and must produce exactly the actions that a
long-lived executor produces by resuming with the new events only; the run must end with the result
the plan predicts, and never report non-determinism.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from tests.conftest import fuzz_examples

from .history import T0, registry

Step = tuple[str, int]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("act"), st.integers(0, 50)),
        st.tuples(st.just("timer"), st.integers(1, 90)),
        st.tuples(st.just("fan"), st.integers(0, 4)),
        st.tuples(st.just("event"), st.integers(0, 2)),
    ),
    min_size=1,
    max_size=6,
)


def plan_orchestrator(ctx: task.OrchestrationContext, plan: list[list[Any]]) -> Any:
    total = 0
    for kind, value in plan:
        if kind == "act":
            total += yield ctx.call_activity("double", input=value)
        elif kind == "timer":
            yield ctx.create_timer(timedelta(seconds=value))
        elif kind == "fan":
            total += sum((yield task.when_all([ctx.call_activity("double", input=i) for i in range(value)])))
        else:
            total += yield ctx.wait_for_external_event(f"E{value}")
    return total


def expected_total(plan: list[Step]) -> int:
    total = 0
    for kind, value in plan:
        if kind == "act":
            total += 2 * value
        elif kind == "fan":
            total += sum(2 * i for i in range(value))
        elif kind == "event":
            total += value + 100
    return total


class Backend:
    """Turns actions into history and decides, with hypothesis' help, what happens next."""

    def __init__(self) -> None:
        self.history: list[pb.HistoryEvent] = []
        self.now = T0
        self.activities: dict[int, int] = {}
        self.timers: dict[int, Any] = {}

    def event(self, **kind: Any) -> pb.HistoryEvent:
        event = pb.HistoryEvent(eventId=kind.pop("event_id", -1), **kind)
        event.timestamp.FromDatetime(self.now)
        return event

    def record(self, actions: list[pb.OrchestratorAction]) -> pb.CompleteOrchestrationAction | None:
        for action in actions:
            if action.HasField("scheduleTask"):
                self.activities[action.id] = int(action.scheduleTask.input.value or "0")
                self.history.append(self.event(event_id=action.id, taskScheduled=pb.TaskScheduledEvent(
                    name=action.scheduleTask.name)))
            elif action.HasField("createTimer"):
                self.timers[action.id] = action.createTimer.fireAt
                self.history.append(self.event(event_id=action.id, timerCreated=pb.TimerCreatedEvent(
                    fireAt=action.createTimer.fireAt)))
            elif action.HasField("completeOrchestration"):
                return action.completeOrchestration
        return None

    def next_batch(self, data: st.DataObject, everything: bool) -> list[pb.HistoryEvent]:
        """Deliver some outstanding work; with ``everything``, all of it, so every run finishes."""
        self.now += timedelta(seconds=1)
        batch = [self.event(orchestratorStarted=pb.OrchestratorStartedEvent())]
        pending = sorted(self.activities)
        order = data.draw(st.permutations(pending), label="completion order") if pending else []
        count = len(order) if everything else data.draw(st.integers(0, len(order)), label="completions")
        for task_id in order[:count]:
            done = pb.TaskCompletedEvent(taskScheduledId=task_id)
            done.result.value = str(2 * self.activities.pop(task_id))
            batch.append(self.event(taskCompleted=done))
        if self.timers and (everything or data.draw(st.booleans(), label="fire timers")):
            for timer_id, fire_at in sorted(self.timers.items()):
                self.now = max(self.now, fire_at.ToDatetime())
                batch.append(self.event(timerFired=pb.TimerFiredEvent(timerId=timer_id, fireAt=fire_at)))
            self.timers.clear()
        names = [0, 1, 2] if everything else data.draw(st.lists(st.integers(0, 2), max_size=2), label="events")
        for name in names:
            raised = pb.EventRaisedEvent(name=f"e{name}")
            raised.input.value = str(name + 100)
            batch.append(self.event(eventRaised=raised))
        return batch


@settings(max_examples=fuzz_examples(100), deadline=None)
@given(plan=steps, data=st.data())
def test_replay_from_scratch_matches_resuming_and_reaches_the_planned_result(
        plan: list[Step], data: st.DataObject) -> None:
    reg = registry(plan_orchestrator)
    backend = Backend()
    started = pb.ExecutionStartedEvent(name="plan_orchestrator")
    started.input.value = repr([list(step) for step in plan]).replace("'", '"')
    first_batch = [backend.event(orchestratorStarted=pb.OrchestratorStartedEvent()),
                   backend.event(executionStarted=started)]
    live = OrchestrationExecutor(reg)
    actions = live.execute("sim", [], first_batch).actions
    backend.history.extend(first_batch)
    for episode in range(100):
        outcome = backend.record(list(actions))
        if outcome is not None:
            assert outcome.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, outcome.failureDetails
            assert int(outcome.result.value) == expected_total(plan)
            return
        batch = backend.next_batch(data, everything=episode % 4 == 3)
        resumed = live.resume(batch).actions
        replayed = OrchestrationExecutor(reg).execute("sim", list(backend.history), batch).actions
        assert list(resumed) == list(replayed)
        backend.history.extend(batch)
        actions = resumed
    raise AssertionError("the orchestration did not finish within 100 episodes")
