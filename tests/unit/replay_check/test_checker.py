"""The replay check tells replaying histories from diverging ones, and says where and why they diverge."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.testing import DivergenceKind, ReplayChecker, ReplayDivergenceError, Verdict
from durabletask.worker import (
    OrchestrationWorkItemFilter,
    TaskHubGrpcWorker,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
    WorkItemFilters,
)
from tests.unit.replay.history import T0, History, failure

from .support import line_of, recorded

HOUR = T0 + timedelta(hours=1)


def waited_order(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.create_timer(timedelta(hours=1))
    return (yield ctx.call_activity("charge"))


def order_with_check_first(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity("validate")  # inserted step
    yield ctx.create_timer(timedelta(hours=1))
    return (yield ctx.call_activity("charge"))


async def async_order_with_check_first(ctx: task.OrchestrationContext, _: Any) -> Any:
    await ctx.call_activity("validate")  # inserted step
    await ctx.create_timer(timedelta(hours=1))
    return await ctx.call_activity("charge")


def order_with_new_input_handling(ctx: task.OrchestrationContext, order: Any) -> Any:
    yield ctx.create_timer(timedelta(hours=1))
    return (yield ctx.call_activity("charge", input=order["amount"]))  # compatible: only the input changed


def waited_history(instance_id: str = "order-1") -> History:
    return (
        History(instance_id).started("order", {"amount": 5}).timer_created(1, HOUR).orchestrator_completed()
        .orchestrator_started(HOUR).timer_fired(1, HOUR).task_scheduled(2, "charge").orchestrator_completed()
    )  # fmt: skip


def check(orchestrator: Any, history: History, **options: Any) -> Any:
    (result,) = ReplayChecker({"order": orchestrator}, **options).check([recorded(history)]).results
    return result


def test_the_code_that_recorded_a_history_replays_it() -> None:
    result = check(waited_order, waited_history())
    assert result.verdict is Verdict.REPLAYS
    assert (result.instance_id, result.name, result.divergence) == ("order-1", "order", None)


def test_a_compatible_change_replays() -> None:
    assert check(order_with_new_input_handling, waited_history()).verdict is Verdict.REPLAYS


@pytest.mark.parametrize("code", [order_with_check_first, async_order_with_check_first])
def test_a_step_inserted_before_a_wait_diverges_at_its_sequence_id_and_line(code: Any) -> None:
    result = check(code, waited_history())
    assert result.verdict is Verdict.DIVERGES
    divergence = result.divergence
    assert divergence.kind is DivergenceKind.NONDETERMINISM
    assert (divergence.sequence_id, divergence.recorded, divergence.current) == (
        1,
        "create_timer()",
        "call_activity('validate')",
    )
    location = divergence.location
    assert location.path.endswith("test_checker.py")
    assert location.line == line_of(code, "# inserted step")
    assert location.function == code.__name__
    assert "validate" in (location.code or "")
    assert "with ID 1" in divergence.message


def reordered(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity("ship")  # now first
    yield ctx.call_activity("pack")


def test_two_calls_reordered_diverge_at_the_first() -> None:
    history = (
        History("o").started("order").task_scheduled(1, "pack").orchestrator_completed()
        .orchestrator_started().task_completed(1).task_scheduled(2, "ship").orchestrator_completed()
    )  # fmt: skip
    divergence = check(reordered, history).divergence
    assert (divergence.sequence_id, divergence.recorded, divergence.current) == (
        1,
        "call_activity('pack')",
        "call_activity('ship')",
    )
    assert divergence.location.line == line_of(reordered, "# now first")


def shortened(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity("pack")
    yield ctx.wait_for_external_event("shipped")  # waits here


def test_a_removed_call_reads_as_no_call_and_points_where_the_code_waits() -> None:
    history = (
        History("o").started("order").task_scheduled(1, "pack").orchestrator_completed()
        .orchestrator_started().task_completed(1).task_scheduled(2, "ship").orchestrator_completed()
    )  # fmt: skip
    divergence = check(shortened, history).divergence
    assert divergence.kind is DivergenceKind.NONDETERMINISM
    assert (divergence.sequence_id, divergence.current) == (2, None)
    assert "makes no call" in divergence.message
    assert divergence.location.line == line_of(shortened, "# waits here")


def strict_about_input(ctx: task.OrchestrationContext, order: Any) -> Any:
    amount = order["total"]  # the old input has no 'total'
    yield ctx.call_activity("charge", input=amount)


def test_code_that_raises_on_a_recorded_input_diverges_with_the_line_that_raised() -> None:
    history = History("o").started("order", {"amount": 5}).task_scheduled(1, "charge").orchestrator_completed()
    divergence = check(strict_about_input, history).divergence
    assert divergence.kind is DivergenceKind.ERROR
    assert "KeyError" in divergence.message
    assert divergence.location.line == line_of(strict_about_input, "# the old input")


def test_a_completed_history_replays_when_the_code_ends_it_alike() -> None:
    history = waited_history().orchestrator_started().task_completed(2, "ok")
    history.orchestrator_completed().execution_completed(pb.ORCHESTRATION_STATUS_COMPLETED)
    assert check(waited_order, history).verdict is Verdict.REPLAYS


def order_with_receipt(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.create_timer(timedelta(hours=1))
    charged = yield ctx.call_activity("charge")
    yield ctx.call_activity("send_receipt")  # new last step
    return charged


def test_a_completed_history_diverges_when_the_code_goes_on_past_its_end() -> None:
    history = waited_history().orchestrator_started().task_completed(2, "ok")
    history.orchestrator_completed().execution_completed(pb.ORCHESTRATION_STATUS_COMPLETED)
    divergence = check(order_with_receipt, history).divergence
    assert divergence.kind is DivergenceKind.OUTCOME
    assert (divergence.sequence_id, divergence.recorded, divergence.current) == (
        3,
        "the end of the execution (completed)",
        "call_activity('send_receipt')",
    )
    assert divergence.location.line == line_of(order_with_receipt, "# new last step")


def test_the_same_change_is_safe_for_a_running_instance() -> None:
    # The new last step comes after everything a running instance has recorded: it will simply run.
    assert check(order_with_receipt, waited_history()).verdict is Verdict.REPLAYS


def forgiving(ctx: task.OrchestrationContext, _: Any) -> Any:
    try:
        yield ctx.call_activity("charge")
    except task.TaskFailedError:
        yield ctx.call_activity("refund")  # the fix


def test_a_failed_history_replays_when_only_what_follows_the_failure_changed() -> None:
    history = (
        History("o").started("order").task_scheduled(1, "charge").orchestrator_completed()
        .orchestrator_started().task_failed(1, failure("declined")).orchestrator_completed()
        .execution_completed(pb.ORCHESTRATION_STATUS_FAILED, failure("declined"))
    )  # fmt: skip
    assert check(forgiving, history).verdict is Verdict.REPLAYS
    divergence = check(reordered, history).divergence  # its first call is another activity
    assert divergence.kind is DivergenceKind.NONDETERMINISM


def looping(ctx: task.OrchestrationContext, count: int) -> Any:
    if ctx.version == "2":
        yield ctx.call_activity("audit")  # only for version 2 executions
    yield ctx.create_timer(timedelta(hours=1))
    if count < 1:
        ctx.continue_as_new(count + 1, new_version="2")
    return count


def looping_unversioned(ctx: task.OrchestrationContext, count: int) -> Any:
    yield ctx.call_activity("audit")  # for every execution
    yield ctx.create_timer(timedelta(hours=1))
    if count < 1:
        ctx.continue_as_new(count + 1, new_version="2")
    return count


def two_executions() -> History:
    history = (
        History("loop").started("order", 0).timer_created(1, HOUR).orchestrator_completed()
        .orchestrator_started(HOUR).timer_fired(1, HOUR).orchestrator_completed()
        .execution_completed(pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW)
    )  # fmt: skip
    later = HOUR + timedelta(seconds=1)
    history.started("order", 1, version="2", at=later).task_scheduled(1, "audit").orchestrator_completed()
    return history


def test_each_continue_as_new_execution_replays_on_its_own_with_its_version() -> None:
    results = ReplayChecker({"order": looping}).check([recorded(two_executions())]).results
    assert [(r.execution, r.version, r.verdict) for r in results] == [
        (0, None, Verdict.REPLAYS),
        (1, "2", Verdict.REPLAYS),
    ]
    results = ReplayChecker({"order": looping_unversioned}).check([recorded(two_executions())]).results
    assert [(r.execution, r.verdict) for r in results] == [(0, Verdict.DIVERGES), (1, Verdict.REPLAYS)]
    assert results[0].divergence.recorded == "create_timer()"


def test_a_version_the_worker_hands_on_is_skipped_and_one_it_fails_diverges() -> None:
    history = History("v1").started("order", version="1").timer_created(1, HOUR).orchestrator_completed()
    strict = VersioningOptions(version="2", match_strategy=VersionMatchStrategy.STRICT)
    result = check(waited_order, history, versioning=strict)
    assert result.verdict is Verdict.SKIPPED
    assert "does not match" in result.reason
    failing = VersioningOptions(
        version="2", match_strategy=VersionMatchStrategy.STRICT, failure_strategy=VersionFailureStrategy.FAIL
    )
    divergence = check(waited_order, history, versioning=failing).divergence
    assert divergence.kind is DivergenceKind.VERSION
    current = VersioningOptions(version="2", match_strategy=VersionMatchStrategy.CURRENT_OR_OLDER)
    assert check(waited_order, history, versioning=current).verdict is Verdict.REPLAYS


def test_a_worker_is_checked_with_its_own_registrations_and_versioning() -> None:
    worker = TaskHubGrpcWorker()
    worker.add_orchestrator(order_with_check_first, name="order")
    worker.use_versioning(VersioningOptions(version="1", match_strategy=VersionMatchStrategy.STRICT))
    checker = ReplayChecker(worker)
    versioned = History("a").started("order", version="1").timer_created(1, HOUR).orchestrator_completed()
    other = History("b").started("order", version="0").timer_created(1, HOUR).orchestrator_completed()
    report = checker.check([recorded(versioned), recorded(other)])
    assert [r.verdict for r in report.results] == [Verdict.DIVERGES, Verdict.SKIPPED]
    with pytest.raises(ValueError, match="versioning"):
        ReplayChecker(worker, versioning=VersioningOptions())


def test_an_unregistered_orchestrator_diverges_unless_the_workers_filters_leave_it_to_others() -> None:
    history = History("x").started("someone_else").task_scheduled(1, "a").orchestrator_completed()
    # A worker that sends no filters receives every instance, and would fail this one.
    divergence = check(waited_order, history).divergence
    assert divergence.kind is DivergenceKind.ERROR
    assert "OrchestratorNotRegisteredError" in divergence.message and "someone_else" in divergence.message
    worker = TaskHubGrpcWorker()
    worker.add_orchestrator(waited_order, name="order")
    worker.use_work_item_filters()  # generated from what is registered when it starts
    (result,) = ReplayChecker(worker).check([recorded(history)]).results
    assert result.verdict is Verdict.SKIPPED
    assert "filters" in result.reason
    explicit = TaskHubGrpcWorker()
    explicit.add_orchestrator(waited_order, name="someone_else")
    explicit.use_work_item_filters(WorkItemFilters(orchestrations=[OrchestrationWorkItemFilter("someone_else", ["2"])]))
    (result,) = ReplayChecker(explicit).check([recorded(history)]).results
    assert result.verdict is Verdict.SKIPPED  # only version 2 is sent to it


def test_a_history_without_its_start_event_is_reported_as_unreplayable() -> None:
    history = History("cut").orchestrator_started().task_completed(1).orchestrator_completed()
    divergence = check(waited_order, history).divergence
    assert divergence.kind is DivergenceKind.HISTORY


def test_an_instance_with_nothing_recorded_yet_is_skipped() -> None:
    (result,) = ReplayChecker({"order": waited_order}).check([recorded(History("new"))]).results
    assert (result.instance_id, result.verdict) == ("new", Verdict.SKIPPED)
    assert "nothing is recorded yet" in result.reason


def parent(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_sub_orchestrator("child_v2", instance_id="kid")  # renamed child


def test_a_sub_orchestration_call_mismatch_names_both_calls() -> None:
    history = History("p").started("order").sub_created(1, "child", "kid").orchestrator_completed()
    divergence = check(parent, history).divergence
    assert (divergence.recorded, divergence.current) == (
        "call_sub_orchestrator('child')",
        "call_sub_orchestrator('child_v2')",
    )
    assert divergence.location.line == line_of(parent, "# renamed child")


def flaky(ctx: task.OrchestrationContext, _: Any) -> Any:
    policy = task.RetryPolicy(first_retry_interval=timedelta(seconds=5), max_number_of_attempts=4)
    return (yield ctx.call_activity("flaky", retry_policy=policy))


def test_retries_and_their_backoff_timers_replay() -> None:
    history = History("r").started("order").task_scheduled(1, "flaky").orchestrator_completed()
    history.orchestrator_started().task_failed(1, failure("once"))
    fire = history.now + timedelta(seconds=5)
    history.timer_created(2, fire).orchestrator_completed().orchestrator_started(fire).timer_fired(2, fire)
    history.task_scheduled(1, "flaky").orchestrator_completed()
    assert check(flaky, history).verdict is Verdict.REPLAYS


def test_the_check_leaves_the_threads_profiler_as_it_was() -> None:
    def mine(*_: Any) -> None:
        return None

    previous = sys.getprofile()
    sys.setprofile(mine)
    try:
        assert check(order_with_check_first, waited_history()).diverges
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(previous)


def test_a_report_raises_for_its_diverging_executions_only() -> None:
    checker = ReplayChecker({"order": order_with_check_first})
    report = checker.check([recorded(waited_history("bad-1"))])
    with pytest.raises(ReplayDivergenceError, match=r"1 of 1 execution\(s\) diverge:\nbad-1: order diverges"):
        report.raise_if_diverged()
    ReplayChecker({"order": waited_order}).check([recorded(waited_history())]).raise_if_diverged()
    data = report.to_dict()
    assert (data["ok"], data["diverges"]) == (False, 1)
    assert data["results"][0]["divergence"]["location"]["line"] == line_of(order_with_check_first, "# inserted")


def decides_on_a_large_result(ctx: task.OrchestrationContext, _: Any) -> Any:
    report = yield ctx.call_activity("build_report")
    if report["rows"] > 1000:  # reads the payload the history holds as a token
        yield ctx.call_activity("archive")


def test_payloads_kept_in_the_workers_store_are_fetched_for_the_replay(tmp_path: Any) -> None:
    from durabletask.payload.file_store import FilePayloadStore

    store = FilePayloadStore(tmp_path)
    token = store.upload(b'{"rows": 5000}', instance_id="big")
    history = (
        History("big").started("order").task_scheduled(1, "build_report").orchestrator_completed()
        .orchestrator_started().task_completed(1, raw=token).task_scheduled(2, "archive").orchestrator_completed()
    )  # fmt: skip
    worker = TaskHubGrpcWorker(payload_store=store)
    worker.add_orchestrator(decides_on_a_large_result, name="order")
    assert ReplayChecker(worker).check([recorded(history)]).ok
    # Without the store the token is all there is, and the code cannot read it.
    divergence = check(decides_on_a_large_result, history).divergence
    assert divergence.kind is DivergenceKind.ERROR
    assert "SerializationError" in divergence.message
