"""Rewind: the rewritten history answered instead of an episode, and the replay of that history afterwards.

Each failing history is first checked against the orchestrator (its last episode really fails it), then
closed the way a backend closes it and followed by the rewind request a backend sends.
"""

from __future__ import annotations

import base64
import json
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from durabletask import task
from durabletask._errors import ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import rewind
from durabletask._replay.executor import ExecutionResults, OrchestrationExecutor
from durabletask._replay.failures import OrchestrationStateError

from .history import History, failed_with, failure, output, registry, run
from .test_peer_parity import _PEER_RUNNER as PEER_RUNNER

REASON = "database repaired"
RETRY = task.RetryPolicy(first_retry_interval=timedelta(seconds=5), max_number_of_attempts=3)


def etl(ctx: task.OrchestrationContext, source: str) -> Any:
    raw = yield ctx.call_activity("extract", input=source)
    clean = yield ctx.call_activity("transform", input=raw)
    return (yield ctx.call_activity("load", input=clean))


def fan_out(ctx: task.OrchestrationContext, n: int) -> Any:
    return sum((yield task.when_all([ctx.call_activity("work", input=i) for i in range(n)])))


def parent(ctx: task.OrchestrationContext, _: Any) -> Any:
    prepared = yield ctx.call_activity("prepare")
    return (yield ctx.call_sub_orchestrator("child", input=prepared, instance_id="kid"))


def child(ctx: task.OrchestrationContext, n: int) -> Any:
    return (yield ctx.call_activity("compute", input=n))


def retrying(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity("flaky", input=1, retry_policy=RETRY))


def retry_then_next(ctx: task.OrchestrationContext, _: Any) -> Any:
    first = yield ctx.call_activity("flaky", retry_policy=RETRY)
    return (yield ctx.call_activity("next", input=first))


def impatient(ctx: task.OrchestrationContext, _: Any) -> Any:
    slow = ctx.call_activity("slow", retry_policy=RETRY)
    yield ctx.call_activity("fast")  # when this fails, "slow" is still pending
    return (yield slow)


def with_deadline(ctx: task.OrchestrationContext, _: Any) -> Any:
    deadline = ctx.create_timer(timedelta(hours=1))
    done = yield ctx.call_activity("fast")
    yield deadline
    return done


# ---- helpers ---------------------------------------------------------------------------------------

def request_rewind(history: History, orchestrator: Callable[..., Any], *,
                   parent_execution_id: str | None = None) -> History:
    """Ends ``history`` with its (checked) failure as a backend records it, then asks for a rewind."""
    details = failed_with(run(history, orchestrator))
    history.orchestrator_completed().commit().execution_completed(details=details)
    return history.new().orchestrator_started().rewound(REASON, parent_execution_id=parent_execution_id)


def rewritten(history: History) -> list[pb.HistoryEvent]:
    """The new history a rewind request is answered with; no orchestrator is registered, none may run."""
    result = run(history)
    assert result.encoded_custom_status is None
    (action,) = result.actions
    assert action.id == -1 and action.HasField("rewindOrchestration")
    return list(action.rewindOrchestration.newHistory)


def outline(events: Sequence[pb.HistoryEvent]) -> list[str]:
    """Event kinds with the sequence ID each one carries or answers, e.g. ``taskCompleted->0``."""
    lines = []
    for e in events:
        kind = str(e.WhichOneof("eventType"))
        body = getattr(e, kind)
        if kind in ("taskScheduled", "subOrchestrationInstanceCreated"):
            lines.append(f"{kind}#{e.eventId}:{body.name}")
        elif kind == "timerCreated":
            lines.append(f"timerCreated#{e.eventId}")
        elif kind == "timerFired":
            lines.append(f"timerFired->{body.timerId}")
        elif hasattr(body, "taskScheduledId"):
            lines.append(f"{kind}->{body.taskScheduledId}")
        else:
            lines.append(kind)
    return lines


def after_rewind(new_history: Sequence[pb.HistoryEvent], previous: History) -> History:
    """What the backend dispatches once it stored ``new_history``: the history plus a fresh orchestratorStarted."""
    history = History(previous.instance_id)
    history.old = list(new_history)
    return history.new().orchestrator_started(previous.now + timedelta(minutes=1))


def schedule(id: int, name: str, raw_input: str | None = None) -> pb.OrchestratorAction:
    action = pb.ScheduleTaskAction(name=name)
    if raw_input is not None:
        action.input.value = raw_input
    return pb.OrchestratorAction(id=id, scheduleTask=action)


def unchanged_except_start(new_history: Sequence[pb.HistoryEvent], original: History) -> bool:
    return all(e in original.all for e in new_history if not e.HasField("executionStarted"))


# ---- ETL chain -------------------------------------------------------------------------------------

def etl_failing_at_load() -> History:
    h = History().started("etl", "in.csv", execution_id="run-1").task_scheduled(1, "extract", "in.csv")
    h.orchestrator_completed().orchestrator_started().task_completed(1, "raw").task_scheduled(2, "transform", "raw")
    h.orchestrator_completed().orchestrator_started().task_completed(2, "clean").task_scheduled(3, "load", "clean")
    h.orchestrator_completed().new().orchestrator_started().task_failed(3, failure("db down", "builtins.OSError"))
    return request_rewind(h, etl)


def test_etl_rewind_drops_the_failed_load_and_the_end_of_the_execution() -> None:
    h = etl_failing_at_load()
    new_history = rewritten(h)
    assert outline(new_history) == [
        "orchestratorStarted", "executionStarted", "taskScheduled#1:extract", "orchestratorCompleted",
        "orchestratorStarted", "taskCompleted->1", "taskScheduled#2:transform", "orchestratorCompleted",
        "orchestratorStarted", "taskCompleted->2", "orchestratorCompleted",
        "orchestratorStarted", "orchestratorCompleted",
        "orchestratorStarted", "executionRewound",
    ]
    assert unchanged_except_start(new_history, h)
    assert new_history[-1].executionRewound.reason.value == REASON
    started = new_history[1].executionStarted
    assert started.orchestrationInstance.instanceId == h.instance_id
    assert started.orchestrationInstance.executionId.value not in ("", "run-1")
    assert not started.HasField("parentInstance")
    expected_start = pb.ExecutionStartedEvent()
    expected_start.CopyFrom(h.old[1].executionStarted)
    expected_start.orchestrationInstance.executionId.value = started.orchestrationInstance.executionId.value
    assert started == expected_start


def test_replay_after_rewind_reruns_only_the_load_and_reuses_earlier_results() -> None:
    h = etl_failing_at_load()
    replay = after_rewind(rewritten(h), h)
    assert run(replay, etl).actions == [schedule(3, "load", '"clean"')]
    replay.task_scheduled(3, "load", "clean").orchestrator_completed().commit()
    replay.new().orchestrator_started().task_completed(3, "loaded")
    assert output(run(replay, etl)) == "loaded"


def test_a_rewind_event_still_in_the_new_events_after_the_history_was_replaced_is_an_ordinary_replay() -> None:
    h = etl_failing_at_load()
    new_history = rewritten(h)
    result = OrchestrationExecutor(registry(etl)).execute(h.instance_id, new_history[:-2], new_history[-2:])
    assert result.actions == [schedule(3, "load", '"clean"')]


def test_an_orchestration_can_be_rewound_again_after_failing_again() -> None:
    h = etl_failing_at_load()
    first = rewritten(h)
    replay = after_rewind(first, h).task_scheduled(3, "load", "clean").orchestrator_completed().commit()
    replay.new().orchestrator_started().task_failed(3, failure("still down"))
    second = rewritten(request_rewind(replay, etl))
    assert outline(second).count("executionRewound") == 2
    assert "taskScheduled#3:load" not in outline(second)
    ids = [events[1].executionStarted.orchestrationInstance.executionId.value for events in (first, second)]
    assert ids[0] != ids[1]
    assert run(after_rewind(second, replay), etl).actions == [schedule(3, "load", '"clean"')]


def test_the_new_execution_id_is_derived_from_the_request() -> None:
    h = etl_failing_at_load()
    first, again = rewritten(h), rewritten(h)
    assert first == again
    later = etl_failing_at_load()
    later.new_events[1].timestamp.FromDatetime(h.now + timedelta(hours=1))
    ids = {events[1].executionStarted.orchestrationInstance.executionId.value for events in (first, rewritten(later))}
    assert len(ids) == 2
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_a_parent_execution_id_does_not_invent_a_parent_for_a_top_level_orchestration() -> None:
    h = etl_failing_at_load()
    h.new_events[1].executionRewound.parentExecutionId.value = "someone"
    assert not rewritten(h)[1].executionStarted.HasField("parentInstance")


# ---- fan-out ---------------------------------------------------------------------------------------

def fan_out_with_two_failures() -> History:
    h = History().started("fan_out", 3)
    for i in range(3):
        h.task_scheduled(i + 1, "work", i)
    h.orchestrator_completed().orchestrator_started().task_failed(1, failure("first")).task_completed(2, 10)
    h.orchestrator_completed().new().orchestrator_started().task_failed(3, failure("third"))
    return request_rewind(h, fan_out)


def test_fan_out_rewind_drops_both_failed_siblings_and_keeps_the_success() -> None:
    h = fan_out_with_two_failures()
    new_history = rewritten(h)
    assert outline(new_history) == [
        "orchestratorStarted", "executionStarted", "taskScheduled#2:work", "orchestratorCompleted",
        "orchestratorStarted", "taskCompleted->2", "orchestratorCompleted",
        "orchestratorStarted", "orchestratorCompleted",
        "orchestratorStarted", "executionRewound",
    ]
    assert unchanged_except_start(new_history, h)


def test_fan_out_replay_schedules_the_two_failed_siblings_again() -> None:
    h = fan_out_with_two_failures()
    replay = after_rewind(rewritten(h), h)
    assert run(replay, fan_out).actions == [schedule(1, "work", "0"), schedule(3, "work", "2")]
    replay.task_scheduled(1, "work", 0).task_scheduled(3, "work", 2).orchestrator_completed().commit()
    replay.new().orchestrator_started().task_completed(3, 30).task_completed(1, 5)
    assert output(run(replay, fan_out)) == 45


@pytest.mark.parametrize(("orchestrator", "pending"), [
    (impatient, lambda h: h.task_scheduled(1, "slow").task_scheduled(2, "fast")),
    (with_deadline, lambda h: h.timer_created(1, h.now + timedelta(hours=1)).task_scheduled(2, "fast")),
])
def test_calls_still_in_flight_when_the_execution_failed_are_sent_again(
        orchestrator: Callable[..., Any], pending: Callable[[History], History]) -> None:
    # The backend discards results addressed to a finished execution, so keeping these calls would
    # leave the rewound orchestration waiting for ever.
    first_episode = run(History().new().started(orchestrator.__name__), orchestrator).actions
    h = pending(History().started(orchestrator.__name__)).orchestrator_completed()
    h.new().orchestrator_started().task_failed(2)
    request_rewind(h, orchestrator)
    new_history = rewritten(h)
    assert not any(e.HasField("taskScheduled") or e.HasField("timerCreated") for e in new_history)
    assert run(after_rewind(new_history, h), orchestrator).actions == first_episode


# ---- sub-orchestrations ----------------------------------------------------------------------------

def parent_with_failed_child() -> History:
    h = History().started("parent", execution_id="p-1").task_scheduled(1, "prepare").orchestrator_completed()
    h.orchestrator_started().task_completed(1, 3).sub_created(2, "child", "kid").orchestrator_completed()
    h.new().orchestrator_started().sub_failed(2, failure("child broke"))
    return request_rewind(h, parent)


def test_a_failed_child_keeps_its_creation_so_the_backend_can_rewind_it() -> None:
    h = parent_with_failed_child()
    new_history = rewritten(h)
    assert outline(new_history) == [
        "orchestratorStarted", "executionStarted", "taskScheduled#1:prepare", "orchestratorCompleted",
        "orchestratorStarted", "taskCompleted->1", "subOrchestrationInstanceCreated#2:child", "orchestratorCompleted",
        "orchestratorStarted", "orchestratorCompleted",
        "orchestratorStarted", "executionRewound",
    ]
    assert unchanged_except_start(new_history, h)


def test_the_parent_replays_waiting_for_the_rewound_child_and_takes_its_result() -> None:
    h = parent_with_failed_child()
    replay = after_rewind(rewritten(h), h)
    assert run(replay, parent).actions == []
    replay.orchestrator_completed().commit().new().orchestrator_started().sub_completed(2, "fixed")
    assert output(run(replay, parent)) == "fixed"


def test_a_rewound_child_follows_its_parents_new_execution() -> None:
    h = History("kid").started("child", 3, parent="abc123", execution_id="kid-1")
    h.old[1].executionStarted.parentInstance.orchestrationInstance.executionId.value = "p-1"
    h.old[1].executionStarted.parentInstance.taskScheduledId = 1
    h.task_scheduled(1, "compute", 3).orchestrator_completed().new().orchestrator_started().task_failed(1)
    request_rewind(h, child, parent_execution_id="p-2")
    new_history = rewritten(h)
    started = new_history[1].executionStarted
    assert started.parentInstance.orchestrationInstance.executionId.value == "p-2"
    assert started.parentInstance.orchestrationInstance.instanceId == "abc123"
    assert started.parentInstance.taskScheduledId == 1
    assert started.orchestrationInstance.executionId.value not in ("", "kid-1")
    assert run(after_rewind(new_history, h), child).actions == [schedule(1, "compute", "3")]


# ---- retry policies --------------------------------------------------------------------------------

def attempt(h: History, failed_id: int, timer_id: int) -> History:
    """A failed attempt, its retry timer, and the timer firing (when the next attempt is scheduled)."""
    h.orchestrator_started().task_failed(failed_id, failure(f"attempt {failed_id}"))
    fire_at = h.now + RETRY.first_retry_interval
    h.timer_created(timer_id, fire_at).orchestrator_completed()
    return h.orchestrator_started(fire_at).timer_fired(timer_id, fire_at)


def test_an_exhausted_retry_is_rewound_to_one_more_attempt_keeping_the_earlier_ones() -> None:
    # Every attempt is scheduled under the first attempt's ID; the retry timers take new IDs.
    h = History().started("retrying").task_scheduled(1, "flaky", 1).orchestrator_completed()
    attempt(h, 1, 2).task_scheduled(1, "flaky", 1).orchestrator_completed()
    attempt(h, 1, 3).task_scheduled(1, "flaky", 1).orchestrator_completed()
    h.new().orchestrator_started().task_failed(1, failure("attempt 3"))
    request_rewind(h, retrying)
    new_history = rewritten(h)
    retry_episodes = ["orchestratorStarted", "taskFailed->{failed}", "timerCreated#{timer}", "orchestratorCompleted",
                      "orchestratorStarted", "timerFired->{timer}"]
    assert outline(new_history) == [
        "orchestratorStarted", "executionStarted", "taskScheduled#1:flaky", "orchestratorCompleted",
        *[line.format(failed=1, timer=2) for line in retry_episodes], "taskScheduled#1:flaky", "orchestratorCompleted",
        *[line.format(failed=1, timer=3) for line in retry_episodes], "orchestratorCompleted",
        "orchestratorStarted", "orchestratorCompleted",
        "orchestratorStarted", "executionRewound",
    ]
    replay = after_rewind(new_history, h)
    assert run(replay, retrying).actions == [schedule(1, "flaky", "1")]
    replay.task_scheduled(1, "flaky", 1).orchestrator_completed().commit()
    replay.new().orchestrator_started().task_completed(1, "finally")
    assert output(run(replay, retrying)) == "finally"


def test_a_retry_that_succeeded_is_kept_whole_when_a_later_call_fails() -> None:
    h = History().started("retry_then_next").task_scheduled(1, "flaky").orchestrator_completed()
    attempt(h, 1, 2).task_scheduled(1, "flaky").orchestrator_completed()
    h.orchestrator_started().task_completed(1, "v").task_scheduled(3, "next", "v").orchestrator_completed()
    h.new().orchestrator_started().task_failed(3)
    request_rewind(h, retry_then_next)
    new_history = rewritten(h)
    assert [line for line in outline(new_history) if "->" in line or "#" in line] == [
        "taskScheduled#1:flaky", "taskFailed->1", "timerCreated#2", "timerFired->2", "taskScheduled#1:flaky",
        "taskCompleted->1",
    ]
    assert run(after_rewind(new_history, h), retry_then_next).actions == [schedule(3, "next", '"v"')]


def test_a_retry_still_waiting_when_the_execution_failed_starts_over() -> None:
    h = History().started("impatient").task_scheduled(1, "slow").task_scheduled(2, "fast").orchestrator_completed()
    h.new().orchestrator_started().task_failed(1).task_failed(2)
    retry_timer = run(h, impatient).actions[0]
    assert retry_timer.HasField("createTimer")
    h.timer_created(retry_timer.id, retry_timer.createTimer.fireAt.ToDatetime())
    request_rewind(h, impatient)
    new_history = rewritten(h)
    assert not any(e.HasField("timerCreated") or e.HasField("taskFailed") for e in new_history)
    assert run(after_rewind(new_history, h), impatient).actions == [schedule(1, "slow"), schedule(2, "fast")]


def retrying_child(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_sub_orchestrator("child", input=2, instance_id="kid", retry_policy=RETRY))


def test_a_retried_child_keeps_its_earlier_attempt_and_waits_for_the_last_one() -> None:
    h = History().started("retrying_child").sub_created(1, "child", "kid").orchestrator_completed()
    h.orchestrator_started().sub_failed(1, failure("first"))
    fire_at = h.now + RETRY.first_retry_interval
    h.timer_created(2, fire_at).orchestrator_completed().orchestrator_started(fire_at).timer_fired(2, fire_at)
    h.sub_created(1, "child", "kid").orchestrator_completed()
    h.new().orchestrator_started().sub_failed(1, failure("second", non_retriable=True))
    request_rewind(h, retrying_child)
    new_history = rewritten(h)
    assert [line for line in outline(new_history) if "->" in line or "#" in line] == [
        "subOrchestrationInstanceCreated#1:child", "subOrchestrationInstanceFailed->1", "timerCreated#2",
        "timerFired->2", "subOrchestrationInstanceCreated#1:child",
    ]
    replay = after_rewind(new_history, h)
    assert run(replay, retrying_child).actions == []
    replay.orchestrator_completed().commit().new().orchestrator_started().sub_completed(1, "third time")
    assert output(run(replay, retrying_child)) == "third time"


def test_retried_failures_pair_each_new_attempt_with_the_failure_its_timer_followed() -> None:
    h = History().started("x").task_scheduled(1, "a").task_scheduled(2, "b").orchestrator_completed()
    h.orchestrator_started().task_failed(1).task_failed(2).timer_created(3, h.now).orchestrator_completed()
    h.orchestrator_started().timer_fired(3, h.now).task_scheduled(2, "b").orchestrator_completed()
    failed_a, failed_b = (i for i, e in enumerate(h.all) if e.HasField("taskFailed"))
    assert rewind.retried_failures(h.all) == {failed_b}
    assert rewind.final_failures(h.all) == {failed_a}


# ---- malformed requests ----------------------------------------------------------------------------

def failed_history() -> History:
    h = History().started("etl", "x").task_scheduled(1, "extract", "x").orchestrator_completed()
    h.orchestrator_started().task_failed(1).orchestrator_completed().execution_completed()
    return h.new()


@pytest.mark.parametrize(("build", "message"), [
    (lambda h: h.rewound(), "exactly orchestratorStarted and executionRewound"),
    (lambda h: h.orchestrator_started().rewound().event_raised("late"), "exactly"),
    (lambda h: h.rewound().orchestrator_started(), "exactly"),
])
def test_a_rewind_request_of_the_wrong_shape_is_a_protocol_error(build: Callable[[History], History],
                                                                   message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        run(build(failed_history()))


def test_only_a_failed_execution_can_be_rewound() -> None:
    h = History().started("etl", "x").orchestrator_completed()
    h.execution_completed(pb.ORCHESTRATION_STATUS_COMPLETED).new().orchestrator_started().rewound()
    with pytest.raises(ProtocolError, match=r"only failed orchestrations.*STATUS_COMPLETED"):
        run(h)


def test_a_rewind_without_an_execution_start_is_a_protocol_error() -> None:
    h = History().execution_completed().new().orchestrator_started().rewound()
    with pytest.raises(ProtocolError, match="no executionStarted"):
        run(h)


def test_a_rewind_leaves_nothing_to_resume() -> None:
    h = etl_failing_at_load()
    executor = OrchestrationExecutor(registry(etl))
    result: ExecutionResults = executor.execute(h.instance_id, h.old, h.new_events)
    assert result.actions[0].HasField("rewindOrchestration")
    assert not executor.is_complete
    with pytest.raises(OrchestrationStateError):
        executor.resume([])


# ---- parity with Microsoft's executor ----------------------------------------------------------------

def _peer_rewrites(peer_py: Path, histories: Sequence[History]) -> list[list[pb.HistoryEvent]]:
    requests = [{"orchestrators": [], "request": base64.b64encode(pb.OrchestratorRequest(
        instanceId=h.instance_id, pastEvents=h.old, newEvents=h.new_events).SerializeToString()).decode()}
        for h in histories]
    done = subprocess.run([str(peer_py), "-c", PEER_RUNNER], input=json.dumps({"source": "", "scenarios": requests}),
                          capture_output=True, text=True, check=False, cwd=tempfile.gettempdir(),
                          env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0, done.stderr
    rewrites = []
    for result in json.loads(done.stdout):
        (action,) = result["actions"]
        parsed = json_format.ParseDict(action, pb.OrchestratorAction())
        rewrites.append(list(parsed.rewindOrchestration.newHistory))
    return rewrites


def _without_execution_id(events: Sequence[pb.HistoryEvent]) -> list[pb.HistoryEvent]:
    # Both sides mint a new execution ID; Microsoft's is random, so only its presence is compared.
    copies = []
    for e in events:
        copy = pb.HistoryEvent()
        copy.CopyFrom(e)
        if copy.HasField("executionStarted"):
            assert copy.executionStarted.orchestrationInstance.executionId.value
            copy.executionStarted.orchestrationInstance.ClearField("executionId")
        copies.append(copy)
    return copies


def _child_of_rewound_parent() -> History:
    h = History("kid").started("child", 3, parent="abc123", execution_id="kid-1")
    h.old[1].executionStarted.parentInstance.orchestrationInstance.executionId.value = "p-1"
    h.task_scheduled(1, "compute", 3).orchestrator_completed().new().orchestrator_started().task_failed(1)
    return request_rewind(h, child, parent_execution_id="p-2")


PARITY = {
    "etl chain": etl_failing_at_load,
    "fan-out with two failures": fan_out_with_two_failures,
    "failed child": parent_with_failed_child,
    "child of a rewound parent": _child_of_rewound_parent,
}


@pytest.mark.interop
def test_same_new_history_as_microsofts_executor(peer_py: Path) -> None:
    histories = [build() for build in PARITY.values()]
    theirs = _peer_rewrites(peer_py, histories)
    for name, h, their_history in zip(PARITY, histories, theirs, strict=True):
        assert _without_execution_id(rewritten(h)) == _without_execution_id(their_history), name


@pytest.mark.interop
def test_where_microsofts_rewrite_would_not_replay_ours_does(peer_py: Path) -> None:
    # Deliberate differences: their rewrite keeps retry timers and calls left in flight.
    retried = History().started("retrying").task_scheduled(1, "flaky", 1).orchestrator_completed()
    attempt(retried, 1, 2).task_scheduled(1, "flaky", 1).orchestrator_completed()
    retried.new().orchestrator_started().task_failed(1)
    retried.new_events[-1].taskFailed.failureDetails.isNonRetriable = True
    request_rewind(retried, retrying)
    in_flight = History().started("impatient").task_scheduled(1, "slow").task_scheduled(2, "fast")
    in_flight.orchestrator_completed().new().orchestrator_started().task_failed(2)
    request_rewind(in_flight, impatient)
    their_retry, their_in_flight = _peer_rewrites(peer_py, [retried, in_flight])

    assert "NonDeterminism" in failed_with(run(after_rewind(their_retry, retried), retrying)).errorType
    assert run(after_rewind(rewritten(retried), retried), retrying).actions == [schedule(1, "flaky", "1")]
    assert run(after_rewind(their_in_flight, in_flight), impatient).actions == [schedule(2, "fast")]
    assert run(after_rewind(rewritten(in_flight), in_flight), impatient).actions == [
        schedule(1, "slow"), schedule(2, "fast")]
