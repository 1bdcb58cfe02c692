"""Hostile pages against the dashboard in real Chromium: forged actions, framing, and the page under its own CSP.

The hostile pages are served from another port of 127.0.0.1: the same *site* as the dashboard, so the browser
sends the dashboard's SameSite=Strict cookie along with whatever they make it request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient
from tests.integration.dashboard.scenario import Scenario, running

expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=15_000)
pytestmark = pytest.mark.adversarial

TOKEN = "s3cret"
SCHEDULE = "weekly"
# Records every CSP violation the page meets, before its own scripts run.
VIOLATIONS = """window.__violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));"""


class HostilePages:
    """A web server on another port of 127.0.0.1 serving the HTML it is given, by path."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path, "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def serve(self, path: str, html: str) -> str:
        self.pages[path] = html
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostilePages]:
    pages = HostilePages()
    try:
        yield pages
    finally:
        pages.close()


@pytest.fixture(scope="module")
def guarded() -> Iterator[Scenario]:
    """A dashboard that needs a token, beside a worker that runs schedules and one active schedule."""
    with running(token=TOKEN) as s:
        ScheduledTaskClient(s.client).create_schedule(
            ScheduleCreationOptions(
                SCHEDULE, "hello", interval=timedelta(days=7), start_at=datetime.now(timezone.utc) + timedelta(1)
            )
        )
        yield s


def log_in(page: Any, s: Scenario) -> None:
    """Through the login form, as a person would: the browser then holds the dashboard's cookie."""
    page.goto(s.url)
    page.get_by_label("Token").fill(TOKEN)
    page.get_by_role("button", name="Open").click()
    expect(page.get_by_role("heading", name="Orchestrations")).to_be_visible()


def schedule_status(page: Any, s: Scenario) -> str:
    page.goto(f"{s.url}hubs/default/schedules")
    row = page.get_by_role("table", name="Schedules").get_by_role("row").filter(has_text=SCHEDULE)
    expect(row).to_have_count(1)
    return str(row.get_by_role("cell").nth(2).inner_text())


def test_a_form_on_another_port_cannot_pause_a_schedule(page: Any, guarded: Scenario, hostile: HostilePages) -> None:
    log_in(page, guarded)
    target = f"{guarded.url}api/hubs/default/schedule/pause?id={SCHEDULE}"
    evil = hostile.serve(
        "/form.html",
        f"""<!doctype html><form method="post" enctype="text/plain" action="{target}">
        <input name='{{"a":"' value='"}}'></form><script>document.forms[0].submit()</script>""",
    )
    with page.expect_response(lambda r: "/schedule/" in r.url) as answered:
        page.goto(evil)
    assert answered.value.status == 403
    assert answered.value.request.all_headers().get("cookie", "").startswith("dtdash_token=")  # the cookie went along
    assert schedule_status(page, guarded) == "Active"


def test_a_script_on_another_port_cannot_delete_a_schedule(page: Any, guarded: Scenario, hostile: HostilePages) -> None:
    log_in(page, guarded)
    target = f"{guarded.url}api/hubs/default/schedule/delete?id={SCHEDULE}"
    evil = hostile.serve(
        "/fetch.html",
        f"""<!doctype html><script>fetch("{target}", {{method: "POST", mode: "no-cors", credentials: "include",
        headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}})</script>""",
    )
    with page.expect_response(lambda r: "/schedule/" in r.url) as answered:
        page.goto(evil)
    assert answered.value.status == 403
    assert schedule_status(page, guarded) == "Active"


def test_a_page_of_another_origin_cannot_frame_the_dashboard(
    page: Any, guarded: Scenario, hostile: HostilePages
) -> None:
    log_in(page, guarded)
    refusals: list[str] = []
    page.on("console", lambda message: refusals.append(message.text))
    evil = hostile.serve(
        "/frame.html",
        f"""<!doctype html><iframe id="victim" src="{guarded.url}hubs/default/schedules"
        onload="document.body.dataset.framed = 'loaded'"></iframe>""",
    )
    page.goto(evil)
    page.wait_for_function("document.body.dataset.framed === 'loaded'")
    (victim,) = [f for f in page.frames if f is not page.main_frame]
    assert victim.locator("#hub-select").count() == 0  # Chromium showed its error page, not the dashboard
    assert any("frame-ancestors 'none'" in text for text in refusals), refusals


def test_every_page_works_under_its_content_security_policy(page: Any, guarded: Scenario) -> None:
    page.add_init_script(VIOLATIONS)
    page.goto(guarded.url)  # the login page
    expect(page.get_by_role("heading", name="Access token required")).to_be_visible()
    log_in(page, guarded)
    instance_id = guarded.client.schedule_new_orchestration("hello", input=None)
    guarded.client.wait_for_orchestration_completion(instance_id, timeout=30)
    page.goto(f"{guarded.url}hubs/default/instances/{instance_id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("COMPLETED")
    bar = page.locator(".gantt-bar").first
    expect(bar).to_be_visible()
    assert bar.evaluate("b => b.style.width").endswith("%")  # set through the CSSOM, which the policy allows
    for section, heading in (("Entities", "Entities"), ("Schedules", "Schedules"), ("Workers", "Workers")):
        page.get_by_role("link", name=section).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    page.get_by_role("link", name="Orchestrations").click()
    page.get_by_role("button", name="New orchestration").click()
    page.get_by_label("Orchestrator name").fill("hello")
    page.get_by_role("dialog").get_by_role("button", name="Start", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("started ")
    assert page.evaluate("window.__violations") == []
