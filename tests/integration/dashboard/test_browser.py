"""The dashboard used as a person would: real Chromium, real clicks, against the emulator with a live worker."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.integration.dashboard.scenario import Scenario, approval, counter, healed

expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=15_000)


def open_instance(page: Any, scenario: Scenario, instance_id: str) -> None:
    page.goto(f"{scenario.url}hubs/default/instances/{instance_id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(instance_id)


def dialog_submit(page: Any, label: str) -> None:
    page.get_by_role("dialog").get_by_role("button", name=label, exact=True).click()


def test_list_filters_in_the_url_paging_and_back(page: Any, scenario: Scenario) -> None:
    page.goto(scenario.url)
    expect(page).to_have_url(re.compile(r"/hubs/default/orchestrations"))
    page.get_by_label("Instance ID prefix").fill("batch-")
    page.get_by_role("button", name="Apply filters").click()
    expect(page).to_have_url(re.compile(r"prefix=batch-"))
    rows = page.get_by_role("table", name="Orchestrations").locator("tbody tr")
    expect(rows).to_have_count(25)
    expect(rows.first).to_contain_text("batch-000")
    expect(page.get_by_text("Page 1", exact=True)).to_be_visible()
    page.get_by_role("button", name="Next page").click()  # the backend's continuation token goes in the URL
    expect(page).to_have_url(re.compile(r"after="))
    expect(page.get_by_text("Page 2 (last)")).to_be_visible()
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("batch-025")
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    page.reload()  # a shared link of page 2 opens page 2
    expect(rows.first).to_contain_text("batch-025")
    page.get_by_role("button", name="Previous page").click()
    expect(rows.first).to_contain_text("batch-000")
    expect(page.get_by_role("button", name="Previous page")).to_be_disabled()

    page.get_by_role("button", name="Clear").click()
    page.get_by_label("FAILED").check()
    page.get_by_label("Tag (key or key=value)").fill("team=shop")
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("order-17")
    expect(rows.first).to_contain_text("team=shop")

    page.go_back()  # the previous filters (none, after Clear) come back from the URL
    expect(page.get_by_label("FAILED")).not_to_be_checked()
    expect(page.get_by_label("Instance ID prefix")).to_have_value("")
    page.go_back()
    expect(page.get_by_label("Instance ID prefix")).to_have_value("batch-")
    expect(rows.first).to_contain_text("batch-000")
    page.go_back()
    expect(page.get_by_text("Page 2 (last)")).to_be_visible()

    page.goto(f"{scenario.url}hubs/default/orchestrations?name=HELLO&prefix=batch-00")  # a shared link
    expect(rows).to_have_count(10)


def test_status_filter_takes_several_statuses(page: Any, scenario: Scenario) -> None:
    page.goto(f"{scenario.url}hubs/default/orchestrations")
    page.get_by_label("FAILED").check()
    page.get_by_label("PENDING").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(page).to_have_url(re.compile(r"status=FAILED%2CPENDING"))
    rows = page.get_by_role("table", name="Orchestrations").locator("tbody tr")
    expect(rows.filter(has_text="stuck-1")).to_have_count(1)
    expect(rows.filter(has_text="batch-000")).to_have_count(0)
    statuses = set(rows.locator("td:nth-child(4)").all_inner_texts())
    assert statuses <= {"FAILED", "PENDING"} and "PENDING" in statuses
    page.reload()  # both stay chosen, from the URL
    expect(page.get_by_label("FAILED")).to_be_checked()
    expect(page.get_by_label("PENDING")).to_be_checked()
    expect(page.get_by_label("RUNNING")).not_to_be_checked()


def test_failed_instance_timeline_history_and_rewind(page: Any, scenario: Scenario) -> None:
    page.goto(f"{scenario.url}hubs/default/orchestrations?status=FAILED")
    page.get_by_role("link", name="order-17").click()
    expect(page.get_by_role("region", name="Failure details")).to_contain_text("card declined for 42")
    expect(page.get_by_role("region", name="Failure details")).to_contain_text("in checkout")  # the stack
    expect(page.locator("dl.props")).to_contain_text("orchestrator: checkout")  # the attach fingerprint

    timeline = page.get_by_role("table", name="Timeline")
    expect(timeline.get_by_role("row").filter(has_text="greet")).to_contain_text("completed")
    expect(timeline.get_by_role("row").filter(has_text="charge")).to_contain_text("failed")
    expect(timeline.get_by_role("row").filter(has_text="timer")).to_contain_text("completed")

    history = page.get_by_role("table", name="History")
    failed = history.get_by_role("row").filter(has=page.get_by_role("cell", name="TaskFailed", exact=True))
    scheduled = history.get_by_role("row").filter(has=page.get_by_role("cell", name="TaskScheduled", exact=True))
    scheduled = scheduled.filter(has_text="charge")
    sequence_id = scheduled.get_by_role("cell").first.inner_text()
    expect(failed).to_contain_text(f"#{sequence_id}")  # the completion names what it completes
    failed.get_by_text("payload", exact=True).click()
    expect(failed).to_contain_text("RuntimeError")

    healed.set()
    page.get_by_role("button", name="Rewind", exact=True).click()
    page.get_by_label("Reason").fill("card fixed")
    dialog_submit(page, "Rewind")
    # Live updates: the page changes by itself when the instance completes.
    expect(page.get_by_role("heading", level=1)).to_contain_text("COMPLETED", timeout=30_000)
    expect(page.get_by_role("table", name="History")).to_contain_text("ExecutionRewound")


def test_retries_show_on_the_timeline(page: Any, scenario: Scenario) -> None:
    open_instance(page, scenario, "retry-5")
    timeline = page.get_by_role("table", name="Timeline")
    expect(timeline.get_by_role("row").filter(has_text="flaky (retry 2)")).to_contain_text("completed")
    expect(timeline.get_by_role("row").filter(has_text="flaky (retry 1)")).to_contain_text("failed")
    expect(timeline.get_by_role("row").filter(has_text="retry delay")).to_have_count(2)


def test_raise_event_on_a_waiting_instance(page: Any, scenario: Scenario) -> None:
    open_instance(page, scenario, "approval-3")
    expect(page.get_by_role("heading", level=1)).to_contain_text("RUNNING")
    page.get_by_role("button", name="Raise event", exact=True).click()
    page.get_by_label("Event name").fill("approve")
    page.get_by_label("Event data (JSON)").fill('"yes"')
    dialog_submit(page, "Raise")
    expect(page.get_by_role("heading", level=1)).to_contain_text("COMPLETED", timeout=30_000)
    expect(page.get_by_role("region", name="Output")).to_contain_text('"approved: yes"')


def test_bad_json_is_refused_with_a_message(page: Any, scenario: Scenario) -> None:
    scenario.client.schedule_new_orchestration(approval, instance_id="approval-json")
    open_instance(page, scenario, "approval-json")
    page.get_by_role("button", name="Raise event", exact=True).click()
    page.get_by_label("Event name").fill("approve")
    page.get_by_label("Event data (JSON)").fill("{yes")
    dialog_submit(page, "Raise")
    expect(page.get_by_role("dialog").get_by_role("alert")).to_contain_text("event data is not valid JSON")
    page.get_by_role("button", name="Cancel").click()

    page.goto(f"{scenario.url}hubs/default/orchestrations")
    page.get_by_role("button", name="New orchestration", exact=True).click()
    page.get_by_label("Orchestrator name").fill("hello")
    page.get_by_label("Input (JSON)").fill("[1, 2,")
    dialog_submit(page, "Start")
    expect(page.get_by_role("dialog").get_by_role("alert")).to_contain_text("input is not valid JSON")


def test_new_orchestration_terminate_and_restart(page: Any, scenario: Scenario) -> None:
    page.goto(f"{scenario.url}hubs/default/orchestrations")
    page.get_by_role("button", name="New orchestration", exact=True).click()
    page.get_by_label("Orchestrator name").fill("approval")
    page.get_by_label("Instance ID (optional)").fill("approval-term")
    page.get_by_label("Tags (key=value, comma-separated)").fill("owner=ops")
    dialog_submit(page, "Start")
    expect(page.get_by_role("status")).to_contain_text("started approval-term")
    page.get_by_role("link", name="approval-term").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("RUNNING", timeout=30_000)
    page.get_by_role("button", name="Terminate", exact=True).click()
    page.get_by_label("Reason").fill("no longer needed")
    dialog_submit(page, "Terminate")
    expect(page.get_by_role("heading", level=1)).to_contain_text("TERMINATED", timeout=30_000)
    expect(page.get_by_role("region", name="Output")).to_contain_text('"no longer needed"')

    page.get_by_role("button", name="Restart", exact=True).click()
    page.get_by_label("Under a new instance ID").check()
    dialog_submit(page, "Restart")
    expect(page.get_by_role("status")).to_contain_text("restarted as ")
    expect(page.get_by_role("heading", level=1)).not_to_contain_text("approval-term")  # the new instance's page
    expect(page.get_by_role("heading", level=1)).to_contain_text("RUNNING", timeout=30_000)


def test_suspend_resume_and_a_refused_action_shows_the_service_error(page: Any, scenario: Scenario) -> None:
    scenario.client.schedule_new_orchestration(approval, instance_id="approval-sr")
    scenario.client.wait_for_orchestration_start("approval-sr", timeout=30)
    open_instance(page, scenario, "approval-sr")
    page.get_by_role("button", name="Suspend", exact=True).click()
    dialog_submit(page, "Suspend")
    expect(page.get_by_role("heading", level=1)).to_contain_text("SUSPENDED", timeout=30_000)
    page.get_by_role("button", name="Resume", exact=True).click()
    dialog_submit(page, "Resume")
    expect(page.get_by_role("heading", level=1)).to_contain_text("RUNNING", timeout=30_000)
    page.get_by_role("button", name="Rewind", exact=True).click()  # a running instance cannot be rewound
    dialog_submit(page, "Rewind")
    expect(page.get_by_role("dialog").get_by_role("alert")).to_contain_text("FAILED_PRECONDITION")


def test_purge_from_the_instance_page(page: Any, scenario: Scenario) -> None:
    open_instance(page, scenario, "hello-1")
    page.get_by_role("button", name="Purge", exact=True).click()
    dialog_submit(page, "Purge")
    expect(page.get_by_role("status")).to_contain_text("purged 1 instance(s)")
    expect(page).to_have_url(re.compile(r"/hubs/default/orchestrations$"))
    assert scenario.client.get_orchestration_state("hello-1") is None


def test_bulk_terminate_with_count_and_confirmation(page: Any, scenario: Scenario) -> None:
    for n in range(3):
        scenario.client.schedule_new_orchestration(approval, instance_id=f"bulk-{n}")
    page.goto(f"{scenario.url}hubs/default/orchestrations?prefix=bulk-")
    page.get_by_role("button", name="Terminate all matching").click()
    expect(page.get_by_role("dialog")).to_contain_text("3 unfinished instance(s) match")
    dialog_submit(page, "Terminate 3")
    expect(page.get_by_role("status")).to_contain_text("terminate: 3 of 3")
    for n in range(3):
        state = scenario.client.wait_for_orchestration_completion(f"bulk-{n}", timeout=30)
        assert state is not None and state.runtime_status.name == "TERMINATED"


def test_signal_an_entity(page: Any, scenario: Scenario) -> None:
    from durabletask.entities import EntityInstanceId

    visits = EntityInstanceId("counter", "visits")
    scenario.client.signal_entity(visits, "add", 1)
    for _ in range(150):  # setup: the signal has run once the entity exists
        if scenario.client.get_entity(visits) is not None:
            break
        time.sleep(0.1)
    page.goto(f"{scenario.url}hubs/default/entities")
    page.get_by_role("link", name="@counter@visits").click()
    expect(page.locator("pre.payload")).to_have_text("1")
    page.get_by_role("button", name="Signal", exact=True).click()
    page.get_by_label("Operation").fill("add")
    page.get_by_label("Input (JSON)").fill("41")
    dialog_submit(page, "Signal")
    expect(page.get_by_role("status")).to_contain_text("signalled 'add'")
    # Live updates: the entity page shows the new state by itself once the operation has run.
    expect(page.locator("pre.payload")).to_have_text("42")
    assert counter is not None

    page.get_by_role("link", name="← Entities").click()
    row = page.get_by_role("table", name="Entities").get_by_role("row").filter(has_text="@counter@")
    expect(row).to_have_count(1)
    scenario.client.signal_entity(EntityInstanceId("counter", "clicks"), "add", 1)
    expect(row).to_have_count(2)  # the list is live too

    page.goto(f"{scenario.url}hubs/default/entities?prefix=%40counter%40&size=1")  # pages of the backend's own
    rows = page.get_by_role("table", name="Entities").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("@counter@clicks")
    page.get_by_role("button", name="Next page").click()
    expect(rows.first).to_contain_text("@counter@visits")
    expect(page.get_by_text("Page 2 (last)")).to_be_visible()
    page.get_by_role("button", name="Previous page").click()
    expect(rows.first).to_contain_text("@counter@clicks")


def test_schedules_with_their_state_and_actions(page: Any, scenario: Scenario) -> None:
    page.goto(scenario.url)
    page.get_by_role("link", name="Schedules").click()
    row = page.get_by_role("table", name="Schedules").get_by_role("row").filter(has_text="nightly-report")
    expect(row).to_contain_text("Active")
    expect(row).to_contain_text("every 86400 s")
    start = row.get_by_role("cell").nth(6).inner_text()
    expect(row.get_by_role("cell").nth(4)).to_have_text(start)  # the next run is the first, at the start time
    expect(row.get_by_role("button", name="Resume nightly-report")).to_have_count(0)
    row.get_by_role("button", name="Pause nightly-report").click()
    expect(page.get_by_role("status")).to_contain_text("paused schedule nightly-report", timeout=30_000)
    expect(row).to_contain_text("Paused")
    expect(row.get_by_role("cell").nth(4)).to_have_text("")  # a paused schedule has no next run
    row.get_by_role("button", name="Resume nightly-report").click()
    expect(page.get_by_role("status")).to_contain_text("resumed schedule nightly-report", timeout=30_000)
    expect(row).to_contain_text("Active")
    row.get_by_role("button", name="Delete nightly-report").click()
    expect(page.get_by_role("status")).to_contain_text("deleted schedule nightly-report", timeout=30_000)
    expect(row).to_have_count(0)


def test_workers_page_is_live(page: Any, scenario: Scenario) -> None:
    page.goto(f"{scenario.url}hubs/default/workers")
    backlog = page.get_by_role("table", name="Pending backlog").get_by_role("row").filter(has_text="live_backlog")
    expect(backlog).to_have_count(0)
    scenario.client.schedule_new_orchestration("live_backlog", instance_id="live-backlog-1")
    expect(backlog).to_contain_text("1")  # without a reload
    scenario.client.schedule_new_orchestration("live_backlog", instance_id="live-backlog-2")
    expect(backlog.get_by_role("cell").last).to_have_text("2")


def test_pending_instance_says_which_worker_is_missing(page: Any, scenario: Scenario) -> None:
    open_instance(page, scenario, "stuck-1")
    expect(page.get_by_role("note")).to_contain_text(
        "None of the 1 connected worker(s) takes orchestration 'nobody_runs_this' version '2.0'"
    )
    page.get_by_role("link", name="Workers").click()
    expect(page.get_by_role("table", name="Connected workers")).to_contain_text("approval, checkout")
    unserved = page.get_by_role("table", name="Pending backlog").get_by_role("row").filter(has_text="nobody_runs_this")
    expect(unserved.get_by_role("cell").nth(3)).to_have_text("0: no connected worker takes it")


def test_an_externalized_payload_is_shown_as_its_token_with_how_to_fetch_it(page: Any, scenario: Scenario) -> None:
    import grpc

    from durabletask._proto import orchestrator_service_pb2 as pb
    from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

    token = "blob:v1:durabletask-payloads:big-input/0123abcd"
    with grpc.insecure_channel(scenario.server.address) as channel:  # as an SDK with a payload store sends it
        request = pb.CreateInstanceRequest(instanceId="big-input", name="nobody_runs_this")
        request.input.value = token
        pb_grpc.TaskHubSidecarServiceStub(channel).StartInstance(request, metadata=[("taskhub", "default")])
    open_instance(page, scenario, "big-input")
    region = page.get_by_role("region", name="Input")
    expect(region.locator("pre.payload")).to_have_text(token)
    expect(region.get_by_role("note")).to_contain_text("Externalized payload")
    expect(region.get_by_role("note")).to_contain_text("durabletask get ID --payloads")


def test_a_live_refresh_of_the_list_keeps_filter_text_being_typed(page: Any, scenario: Scenario) -> None:
    page.goto(f"{scenario.url}hubs/default/orchestrations?prefix=typing-")
    rows = page.get_by_role("table", name="Orchestrations").locator("tbody tr")
    expect(rows).to_contain_text(["No instances"])
    prefix = page.get_by_label("Instance ID prefix")
    prefix.fill("typing-x")  # not applied yet: the user is still typing
    scenario.client.schedule_new_orchestration("approval", instance_id="typing-1")
    expect(rows.first).to_contain_text("typing-1")  # the live feed re-rendered the results
    expect(prefix).to_have_value("typing-x")
    expect(prefix).to_be_focused()
    prefix.press("End")
    prefix.type("y")  # typing goes on in the same field
    expect(prefix).to_have_value("typing-xy")


def test_a_slow_page_left_behind_does_not_replace_the_next(page: Any, scenario: Scenario) -> None:
    held: list[Any] = []

    def hold(route: Any) -> None:  # the list's answer waits until released
        held.append(route)

    page.route("**/api/hubs/default/orchestrations*", hold)
    page.goto(scenario.url)
    for _ in range(300):  # setup: the page has asked for the list
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page never asked for the orchestration list"
    page.get_by_role("link", name="Schedules").click()
    held[0].continue_()  # the list answers only now, after the move to Schedules
    page.unroute("**/api/hubs/default/orchestrations*")
    # The first page's render has ended (a locator, not wait_for_function: the page's CSP forbids evaluating text).
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.get_by_role("heading", level=1)).to_have_text("Schedules")
    expect(page.get_by_role("table", name="Orchestrations")).to_have_count(0)
