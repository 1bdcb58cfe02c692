"""The instance page's running activities and live stream in real Chromium, fed by a real worker as the page is open.

The test tells the worker's activity what to publish and when to heartbeat, then waits for the page to show it:
no timing is asserted, only what appears (Playwright's expectations wait for it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.dashboard.producing import Producing, producing

expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=30_000)

# Records every CSP violation the page meets, before its own scripts run.
VIOLATIONS = """window.__violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));"""
HOSTILE_TOPIC = "<img src=x onerror=\"window.__pwned='topic'\">"
HOSTILE_DATA = "</pre><b id=injected>bold</b><script>window.__pwned='data'</script>"


@pytest.fixture(scope="module")
def live() -> Iterator[Producing]:
    with producing() as p:
        yield p


def open_instance(page: Any, p: Producing, instance_id: str) -> Any:
    page.add_init_script(VIOLATIONS)
    page.goto(f"{p.url}hubs/default/instances/{instance_id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(instance_id)
    return page.get_by_role("table", name="Stream items").locator("tbody tr")


def test_running_activity_and_stream_items_appear_while_the_page_is_open(page: Any, live: Producing) -> None:
    instance_id = live.start("live-<i>1</i>", note="<b>note</b>")
    live.publish(instance_id, [("tokens", {"token": "Hel"})])
    rows = open_instance(page, live, instance_id)
    expect(rows).to_have_count(2)  # the orchestrator's "started" and the activity's first token
    expect(rows.nth(0)).to_contain_text("orchestrator")
    expect(rows.nth(0)).to_contain_text('"note": "<b>note</b>"')  # shown as text, never as markup
    expect(rows.nth(1)).to_contain_text("task #1, attempt 1")
    expect(rows.nth(1)).to_contain_text('{"token": "Hel"}')

    activities = page.get_by_role("table", name="Running activities")
    running = activities.locator("tbody tr")
    expect(running).to_have_count(1)
    expect(running).to_contain_text("#1 produce")
    expect(running).to_contain_text("start_to_close 600 s, schedule_to_close 900 s, heartbeat 120 s")
    live.beat(instance_id, {"page": 41, "html": HOSTILE_TOPIC})
    expect(running).to_contain_text('"page": 41')  # the page re-renders on the heartbeat's history event
    assert activities.locator("img").count() == 0
    expect(running.get_by_role("cell").nth(4)).not_to_have_text("none yet")

    live.publish(instance_id, [("tokens", {"token": "lo"}), (HOSTILE_TOPIC, HOSTILE_DATA)])
    expect(rows).to_have_count(4)  # appended live, without reloading
    expect(rows.nth(2)).to_contain_text('{"token": "lo"}')
    expect(rows.nth(3)).to_contain_text(HOSTILE_TOPIC)
    expect(rows.nth(3)).to_contain_text("<script>window.__pwned='data'</script>")
    assert page.locator("#injected").count() == 0
    assert page.get_by_role("table", name="Stream items").locator("img, script, b").count() == 0

    live.finish(instance_id)
    expect(page.get_by_role("heading", level=1)).to_contain_text("COMPLETED")
    expect(rows).to_have_count(5)
    expect(rows.nth(4)).to_contain_text('"step": "finished"')
    expect(activities).to_have_count(0)  # nothing runs any more
    assert [r.get_attribute("data-id") for r in rows.all()] == sorted(r.get_attribute("data-id") for r in rows.all())
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__violations") == []


def test_the_page_keeps_a_bounded_number_of_rows_as_items_keep_coming(page: Any, live: Producing) -> None:
    instance_id = live.start("many-1")
    rows = open_instance(page, live, instance_id)
    expect(rows).to_have_count(1)
    for start in range(0, 700, 100):
        live.publish(instance_id, [("count", {"n": n}) for n in range(start, start + 100)])
    expect(rows.last).to_contain_text('{"n": 699}')
    expect(rows).to_have_count(500)  # the newest 500; the first 201 left the page
    expect(rows.first).to_contain_text('{"n": 200}')
    expect(page.locator(".stream-summary")).to_contain_text(re.compile(r"201 earlier item\(s\) not shown here"))
    live.finish(instance_id)


def test_a_page_opened_on_a_long_stream_starts_with_its_newest_items(page: Any, live: Producing) -> None:
    instance_id = live.start("long-1")
    live.publish(instance_id, [("count", {"n": n}) for n in range(300)])
    live.finish(instance_id)
    rows = open_instance(page, live, instance_id)
    expect(rows).to_have_count(100)
    expect(rows.last).to_contain_text('"step": "finished"')
    expect(rows.first).to_contain_text('{"n": 201}')
    expect(page.locator(".stream-summary")).to_contain_text("202 earlier item(s) not shown here")
