"""The dashboard under attack over real HTTP: forged state-changing requests, plain HTTP beside TLS, framing headers.

Every route the application has is probed, read from its router, so a route added later is covered by these tests
without editing them. The browser side of the same attacks is in ``test_browser_defenses.py``.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import ssl
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from dtscale_emulator.dashboard import Dashboard, server_tls, start
from dtscale_emulator.dashboard.connect import endpoint_clients
from dtscale_emulator.dashboard.protection import SAFE_METHODS, SECURITY_HEADERS
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient
from tests.integration.dashboard.scenario import Scenario, running
from tests.support.certs import TlsFiles, make_tls

pytestmark = pytest.mark.adversarial

TOKEN = "s3cret"
SCHEDULE = "hourly"
#: What each path parameter of a route is filled with when the tests call it.
SAMPLES = {"hub": "default", "action": "pause", "name": "app.js", "tail": "instances/x"}
FORGED_METHODS = ("POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    url: str,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    context: ssl.SSLContext | None = None,
) -> Answer:
    """One request to the dashboard at ``url``; only the headers of a streamed answer are read."""
    parts = urllib.parse.urlsplit(url)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.netloc, timeout=60, context=context)
    else:
        connection = http.client.HTTPConnection(parts.netloc, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        streamed = response.getheader("Content-Type", "").startswith("text/event-stream")
        return Answer(response.status, response.headers, b"" if streamed else response.read())
    finally:
        connection.close()


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def filled(canonical: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: SAMPLES.get(m.group(1), "x"), canonical)


def routes(dashboard: Dashboard) -> list[tuple[str, str]]:
    """``(method, path)`` of every route of the running application, its path parameters filled in."""
    found = []
    for route in dashboard.runner.app.router.routes():
        canonical = route.resource.canonical if route.resource is not None else ""
        found.append((route.method, filled(canonical)))
    return sorted(set(found))


def state_changing(dashboard: Dashboard) -> list[tuple[str, str]]:
    return [(method, path) for method, path in routes(dashboard) if method not in SAFE_METHODS]


@pytest.fixture(scope="module")
def guarded() -> Iterator[Scenario]:
    """An emulator with a worker that runs schedules, one active schedule, and a dashboard that needs a token."""
    with running(token=TOKEN) as s:
        ScheduledTaskClient(s.client).create_schedule(
            ScheduleCreationOptions(
                SCHEDULE, "hello", interval=timedelta(hours=1), start_at=datetime.now(timezone.utc) + timedelta(1)
            )
        )
        yield s


def schedule_status(s: Scenario) -> str:
    answer = call(s.url, "GET", "/api/hubs/default/schedules", headers={"Authorization": f"Bearer {TOKEN}"})
    (row,) = [r for r in answer.json()["items"] if r["id"] == SCHEDULE]
    return str(row["status"])


def forgeries(url: str) -> dict[str, dict[str, str]]:
    """The requests a hostile page can make a browser send (all with the dashboard's cookie), and one without Origin."""
    other_port = f"http://127.0.0.1:{(urllib.parse.urlsplit(url).port or 80) + 1}"
    cookie = {"Cookie": f"dtdash_token={TOKEN}"}
    return {
        "a cross-origin form": {
            **cookie,
            "Origin": "http://attacker.example",
            "Content-Type": "application/x-www-form-urlencoded",
        },
        "another port of 127.0.0.1, text/plain": {**cookie, "Origin": other_port, "Content-Type": "text/plain"},
        "another port of 127.0.0.1, JSON": {**cookie, "Origin": other_port, "Content-Type": "application/json"},
        "a sandboxed page (Origin: null)": {**cookie, "Origin": "null", "Content-Type": "text/plain"},
        "a cross-site fetch metadata": {
            **cookie,
            "Origin": origin(url),
            "Sec-Fetch-Site": "same-site",
            "Content-Type": "application/json",
        },
        "no Origin": {**cookie, "Content-Type": "application/json"},
    }


def test_the_router_has_the_state_changing_routes_these_tests_enumerate(guarded: Scenario) -> None:
    changing = {path.rsplit("/", 1)[-1] for _, path in state_changing(guarded.dashboard)}
    assert {"orchestrations", "pause", "signal"} <= changing  # the enumeration sees the routes (pause: samples)
    assert all(method == "POST" for method, _ in state_changing(guarded.dashboard))


def test_every_state_changing_route_refuses_forged_requests(guarded: Scenario) -> None:
    body = json.dumps({"name": "evil", "confirm": 0}).encode()
    for method, path in state_changing(guarded.dashboard):
        for attack, headers in forgeries(guarded.url).items():
            answer = call(guarded.url, method, f"{path}?id={SCHEDULE}", headers=headers, body=body)
            assert answer.status == 403, f"{method} {path} from {attack}: {answer.status} {answer.body!r}"
            assert "this dashboard" in answer.json()["error"]


def test_every_state_changing_route_refuses_a_body_other_than_json(guarded: Scenario) -> None:
    for method, path in state_changing(guarded.dashboard):
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"):
            headers = {"Cookie": f"dtdash_token={TOKEN}", "Origin": origin(guarded.url), "Content-Type": kind}
            answer = call(guarded.url, method, f"{path}?id={SCHEDULE}", headers=headers, body=b"{}")
            assert answer.status == 415, f"{method} {path} with {kind}: {answer.status} {answer.body!r}"
            assert "Content-Type: application/json" in answer.json()["error"]


def test_any_other_method_on_any_path_is_refused_unless_it_comes_from_the_page(guarded: Scenario) -> None:
    paths = {path for _, path in routes(guarded.dashboard)}
    for path in paths:
        for method in FORGED_METHODS:
            headers = {"Cookie": f"dtdash_token={TOKEN}", "Origin": "http://127.0.0.1:1", "Content-Type": "text/plain"}
            answer = call(guarded.url, method, path, headers=headers, body=b"{}")
            assert answer.status == 403, f"{method} {path}: {answer.status}"


def test_the_schedule_stays_active_through_the_attacks_and_the_page_still_pauses_it(guarded: Scenario) -> None:
    pause = f"/api/hubs/default/schedule/pause?id={SCHEDULE}"
    for headers in forgeries(guarded.url).values():
        assert call(guarded.url, "POST", pause, headers=headers, body=b"{}").status == 403
    delete = f"/api/hubs/default/schedule/delete?id={SCHEDULE}"
    assert call(guarded.url, "POST", delete, headers=forgeries(guarded.url)["no Origin"], body=b"{}").status == 403
    assert schedule_status(guarded) == "Active"
    page = {"Cookie": f"dtdash_token={TOKEN}", "Origin": origin(guarded.url), "Content-Type": "application/json"}
    answer = call(guarded.url, "POST", pause, headers=page, body=b"{}")
    assert (answer.status, answer.json()) == (200, {"message": f"paused schedule {SCHEDULE}"})
    assert schedule_status(guarded) == "Paused"
    resume = f"/api/hubs/default/schedule/resume?id={SCHEDULE}"
    assert call(guarded.url, "POST", resume, headers=page, body=b"{}").status == 200
    assert schedule_status(guarded) == "Active"


def test_every_state_changing_route_still_serves_the_page(guarded: Scenario) -> None:
    """The page's own requests pass: each route answers with its own result or its own complaint about the input."""
    page = {"Cookie": f"dtdash_token={TOKEN}", "Origin": origin(guarded.url), "Content-Type": "application/json"}
    for method, path in state_changing(guarded.dashboard):
        if path.endswith("/schedule/pause"):
            continue  # carried out for real in the test above; here it would wait for the entity
        answer = call(guarded.url, method, f"{path}?id=nobody", headers=page, body=b"{}")
        assert answer.status not in (401, 403, 415), f"{method} {path}: {answer.status} {answer.body!r}"
    started = call(guarded.url, "POST", "/api/hubs/default/orchestrations", headers=page, body=b'{"name": "hello"}')
    assert started.status == 200 and started.json()["message"].startswith("started ")


def test_every_answer_forbids_framing_and_sniffing(guarded: Scenario) -> None:
    asked = [*routes(guarded.dashboard), ("GET", "/no/such/page"), ("POST", "/api/hubs")]
    for method, path in asked:
        for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}):  # the login page and errors too
            answer = call(guarded.url, method, f"{path}?view=workers&id=x", headers=headers)
            for name, value in SECURITY_HEADERS.items():
                assert answer.headers.get(name) == value, f"{method} {path} ({answer.status}): {name}"
    policy = SECURITY_HEADERS["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy
    assert SECURITY_HEADERS["X-Frame-Options"] == "DENY"


# --- TLS ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls(tmp_path_factory.mktemp("dashboard-tls"))


@pytest.fixture(scope="module")
def emulator() -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True).start()
    try:
        yield server
    finally:
        server.close()


def serve(server: EmulatorServer, **options: Any) -> Dashboard:
    return aio_loop.run(start(endpoint_clients(server.address), ["default"], port=0, **options))


def trusting(tls: TlsFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls.ca))


def test_with_a_certificate_the_dashboard_serves_https_and_a_secure_cookie(
    emulator: EmulatorServer, tls: TlsFiles
) -> None:
    board = serve(emulator, token=TOKEN, tls=server_tls(str(tls.cert), str(tls.key)))
    try:
        assert board.url.startswith("https://127.0.0.1:")
        answer = call(board.url, "GET", f"/?token={TOKEN}", context=trusting(tls))
        assert answer.status == 200
        cookie = answer.headers["Set-Cookie"]
        assert "dtdash_token=" in cookie and "Secure" in cookie and "HttpOnly" in cookie
        listed = call(
            board.url, "GET", "/api/hubs", headers={"Authorization": f"Bearer {TOKEN}"}, context=trusting(tls)
        )
        assert listed.json() == {"hubs": [{"name": "default", "refused": None}]}
        page = {"Authorization": f"Bearer {TOKEN}", "Origin": origin(board.url), "Content-Type": "application/json"}
        started = call(
            board.url,
            "POST",
            "/api/hubs/default/orchestrations",
            headers=page,
            body=b'{"name": "x"}',
            context=trusting(tls),
        )
        assert started.status == 200
        http_origin = {**page, "Origin": origin(board.url).replace("https://", "http://")}
        forged = call(
            board.url,
            "POST",
            "/api/hubs/default/orchestrations",
            headers=http_origin,
            body=b"{}",
            context=trusting(tls),
        )
        assert forged.status == 403
        # The token never crosses the network in the clear: plain HTTP gets no answer at all.
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            call(board.url.replace("https://", "http://"), "GET", f"/?token={TOKEN}")
    finally:
        aio_loop.run(board.close())


def test_over_plain_http_the_cookie_is_not_marked_secure(emulator: EmulatorServer) -> None:
    board = serve(emulator, token=TOKEN)
    try:
        cookie = call(board.url, "GET", f"/?token={TOKEN}").headers["Set-Cookie"]
        assert "dtdash_token=" in cookie and "Secure" not in cookie
    finally:
        aio_loop.run(board.close())


@pytest.mark.parametrize("secure", [False, True])
def test_a_token_over_plain_http_on_another_address_is_warned_about(
    emulator: EmulatorServer, tls: TlsFiles, secure: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings = server_tls(str(tls.cert), str(tls.key)) if secure else None
    with caplog.at_level(logging.WARNING, logger="dtscale_emulator.dashboard"):
        board = serve(emulator, host="0.0.0.0", token=TOKEN, tls=settings)
        aio_loop.run(board.close())
        local = serve(emulator, token=TOKEN)
        aio_loop.run(local.close())
    warned = [r.getMessage() for r in caplog.records if "over plain HTTP" in r.getMessage()]
    assert len(warned) == (0 if secure else 1), warned
    if warned:
        assert "0.0.0.0" in warned[0] and "--tls-cert" in warned[0]


def test_half_a_certificate_is_refused(tls: TlsFiles) -> None:
    with pytest.raises(ValueError, match="both a certificate and its key"):
        server_tls(str(tls.cert), None)
    assert server_tls(None, None) is None


def test_the_bound_port_is_the_one_reported(emulator: EmulatorServer) -> None:
    board = serve(emulator)
    try:
        assert board.port != 0 and call(board.url, "GET", "/api/hubs").status == 200
    finally:
        aio_loop.run(board.close())
