"""The dashboard as shipped: served by ``durabletask-emulator`` and by ``durabletask dashboard`` for another process.

Each test starts real processes; the ``durabletask dashboard`` ones reach a second emulator only through the
dashboard's endpoint client: the public protocol, plus the emulator's worker-view extension (without which the
workers page says the information is not available).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from dtscale_emulator.rpc.methods import SERVICE
from durabletask import client, task, worker
from tests.support.certs import make_tls

ROOT = Path(__file__).resolve().parents[3]
expect = pytest.importorskip("playwright.sync_api").expect


@contextmanager
def process(*argv: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def read_line(proc: subprocess.Popen[str], pattern: str) -> re.Match[str]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(pattern, line)
    if found is None:
        problem = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        raise AssertionError(f"expected {pattern!r}, got {line!r} {problem}")
    return found


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    """A POST as the dashboard's page makes it: a JSON body, from the dashboard's own origin."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/json", "Origin": f"{parts.scheme}://{parts.netloc}"}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@contextmanager
def emulator(*extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    with process("-m", "dtscale_emulator", "--in-memory", "--port", "0", "--log-level", "WARNING", *extra) as proc:
        address = read_line(proc, r"listening on (\S+)").group(1)
        yield address, proc


def test_dashboard_options_default_to_the_public_emulators_port_and_this_machine() -> None:
    from dtscale_emulator.__main__ import build_parser as emulator_parser
    from durabletask._cli.parser import build_parser as cli_parser

    args = emulator_parser().parse_args([])
    assert (args.dashboard_port, args.no_dashboard) == (8082, False)
    assert emulator_parser().parse_args(["--no-dashboard"]).no_dashboard
    args = cli_parser().parse_args(["dashboard"])
    assert (args.host, args.port, args.auth_token) == ("127.0.0.1", 8082, None)


def test_the_emulator_serves_the_dashboard_with_its_workers() -> None:
    with emulator("--dashboard-port", "0") as (_, proc):
        url = read_line(proc, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
        assert get(f"{url}api/hubs") == (200, {"hubs": [{"name": "default", "refused": None}]})
        status, workers = get(f"{url}api/hubs/default/workers")
        assert (status, workers["available"], workers["workers"]) == (200, True, [])
        assert get(f"{url}api/hubs/nope/orchestrations") == (404, {"error": "unknown task hub 'nope'"})
        # A page of another site whose name points at 127.0.0.1 (DNS rebinding) is not served.
        status, body = get(f"{url}api/hubs", {"Host": "attacker.example:8082"})
        assert status == 403 and "only to localhost names" in body["error"]
        assert get(f"{url}api/hubs", {"Host": "localhost"})[0] == 200


@pytest.mark.adversarial
def test_with_a_certificate_the_emulators_dashboard_serves_https_only(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    files = ("--tls-cert", str(tls.cert), "--tls-key", str(tls.key))
    with emulator("--dashboard-port", "0", "--auth-token", "s3cret", *files) as (_, proc):
        url = read_line(proc, r"dashboard on (https://127\.0\.0\.1:\d+/)").group(1)
        trusting = ssl.create_default_context(cafile=str(tls.ca))
        with urllib.request.urlopen(f"{url}?token=s3cret", context=trusting) as response:
            assert response.status == 200
            cookie = response.headers["Set-Cookie"]
        assert "dtdash_token=" in cookie and "Secure" in cookie
        with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
            urllib.request.urlopen(f"{url.replace('https://', 'http://')}?token=s3cret", timeout=30)
    with emulator("--dashboard-port", "0", "--dashboard-insecure-http", *files) as (_, proc):
        url = read_line(proc, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
        assert get(f"{url}api/hubs")[0] == 200


@pytest.mark.adversarial
def test_cli_dashboard_serves_https_with_a_certificate(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    with (
        emulator("--no-dashboard") as (address, _),
        process(
            "-m", "durabletask.cli", "dashboard", "--endpoint", address, "--port", "0",
            "--tls-cert", str(tls.cert), "--tls-key", str(tls.key),
        ) as board,
    ):  # fmt: skip
        url = read_line(board, r"dashboard on (https://127\.0\.0\.1:\d+/)").group(1)
        trusting = ssl.create_default_context(cafile=str(tls.ca))
        with urllib.request.urlopen(f"{url}api/hubs", context=trusting) as response:
            assert json.loads(response.read()) == {"hubs": [{"name": "default", "refused": None}]}
    half = subprocess.run(
        [sys.executable, "-m", "durabletask.cli", "dashboard", "--port", "0", "--tls-cert", str(tls.cert)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert half.returncode == 1 and "needs both a certificate and its key" in half.stderr


def docker_command() -> list[str]:
    """The Docker image's command line, as its Dockerfile gives it."""
    text = (ROOT / "Dockerfile").read_text()
    return list(json.loads(re.search(r"^CMD (\[.*\])$", text, re.MULTILINE).group(1)))  # type: ignore[union-attr]


@pytest.mark.adversarial
def test_the_docker_images_dashboard_binds_every_interface_and_follows_its_tls_variables(tmp_path: Path) -> None:
    argv = docker_command()
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # what the Dockerfile's comment and the README describe
    argv[argv.index("--port") + 1] = "0"
    at = argv.index("--db")
    argv[at : at + 2] = ["--in-memory"]
    tls = make_tls(tmp_path)
    variables = {"DTS_EMULATOR_TLS_CERT": str(tls.cert), "DTS_EMULATOR_TLS_KEY": str(tls.key)}
    with process("-m", "dtscale_emulator", *argv, "--dashboard-port", "0", env=variables) as proc:
        read_line(proc, r"listening on ")
        port = read_line(proc, r"dashboard on https://0\.0\.0\.0:(\d+)/").group(1)
        trusting = ssl.create_default_context(cafile=str(tls.ca))
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/api/hubs", context=trusting) as response:
            assert response.status == 200
    with process("-m", "dtscale_emulator", *argv, "--dashboard-port", "0") as proc:
        read_line(proc, r"listening on ")
        read_line(proc, r"dashboard on http://0\.0\.0\.0:\d+/")
        proc.terminate()
        assert proc.stderr is not None and "reachable from other machines and needs no token" in proc.stderr.read()


def test_insecure_http_without_a_certificate_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from dtscale_emulator.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(["--in-memory", "--dashboard-insecure-http"])
    assert exited.value.code == 2
    assert "--dashboard-insecure-http applies only with --tls-cert" in capsys.readouterr().err


def test_no_dashboard_turns_it_off() -> None:
    with emulator("--no-dashboard") as (address, proc):
        c = client.TaskHubGrpcClient(host_address=address)
        try:
            assert c.get_orchestration_state("nothing") is None  # the emulator is up and answering
        finally:
            c.close()
        proc.terminate()
        assert proc.stdout is not None and "dashboard" not in proc.stdout.read()


def served(ctx: task.OrchestrationContext, _: Any) -> str:
    return "done"


def test_cli_dashboard_for_a_second_emulator_in_the_browser(page: Any) -> None:
    with (
        emulator("--no-dashboard") as (address, _),
        process(
            "-m", "durabletask.cli", "dashboard", "--endpoint", address, "--port", "0", "--task-hubs", "default,missing"
        ) as board,
    ):
        url = read_line(board, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
        w = worker.TaskHubGrpcWorker(host_address=address)
        w.add_orchestrator(served)
        w.use_work_item_filters()  # takes only "served": "unserved" stays PENDING
        w.start()
        c = client.TaskHubGrpcClient(host_address=address)
        try:
            c.schedule_new_orchestration("unserved", instance_id="remote-1", input={"n": 1}, version="3")
            page.goto(f"{url}hubs/default/orchestrations")
            page.get_by_role("link", name="remote-1").click()
            # The worker view reaches the dashboard from the other process through the protocol extension.
            expect(page.get_by_role("note")).to_contain_text(
                "None of the 1 connected worker(s) takes orchestration 'unserved' version '3'"
            )
            page.get_by_role("link", name="Workers").click()
            expect(page.get_by_role("table", name="Connected workers")).to_contain_text("served")
            backlog = page.get_by_role("table", name="Pending backlog").get_by_role("row").filter(has_text="unserved")
            expect(backlog).to_contain_text("orchestration")
            expect(backlog.get_by_role("cell").last).to_have_text("1")
            c.schedule_new_orchestration("unserved", instance_id="remote-2")
            expect(backlog).to_have_count(2)  # the version-less one is a row of its own, shown live
            w.stop()
            expect(page.get_by_role("table", name="Connected workers")).to_contain_text("No worker connected")
        finally:
            w.stop()
            c.close()
        page.goto(f"{url}hubs/default/instances/remote-1")
        page.get_by_role("button", name="Terminate", exact=True).click()
        page.get_by_role("dialog").get_by_role("button", name="Terminate", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("TERMINATED", timeout=30_000)

        # A hub the backend refuses offers no actions, and the server refuses them too.
        page.goto(f"{url}hubs/missing/orchestrations")
        expect(page.get_by_role("alert")).to_contain_text("The backend refused this task hub: NOT_FOUND")
        expect(page.get_by_role("button", name="New orchestration")).to_have_count(0)
        status, body = post(f"{url}api/hubs/missing/orchestrations", {"name": "x"})
        assert status == 403 and "refused" in body["error"]


class PublicOnly(grpc.GenericRpcHandler):
    """Forwards the published service's calls to an emulator and nothing else: a backend without our extensions,
    as managed DTS and the public emulator are."""

    def __init__(self, target: str) -> None:
        self._channel = grpc.insecure_channel(target)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = str(details.method)
        if not method.startswith(f"/{SERVICE.full_name}/"):
            return None  # gRPC answers UNIMPLEMENTED
        call = self._channel.unary_unary(method)

        def forward(request: bytes, context: grpc.ServicerContext) -> bytes:
            metadata = [(k, v) for k, v in context.invocation_metadata() if k in ("taskhub", "authorization")]
            try:
                return call(request, metadata=metadata)  # type: ignore[no-any-return]
            except grpc.RpcError as error:
                context.abort(error.code(), error.details())  # type: ignore[attr-defined]
                raise

        return grpc.unary_unary_rpc_method_handler(forward)


def test_cli_dashboard_says_workers_are_not_available_without_the_extension(page: Any) -> None:
    with emulator("--no-dashboard") as (address, _):
        proxy = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[PublicOnly(address)])
        port = proxy.add_insecure_port("127.0.0.1:0")
        proxy.start()
        try:
            c = client.TaskHubGrpcClient(host_address=address)
            try:
                c.schedule_new_orchestration("unserved", instance_id="plain-1")
            finally:
                c.close()
            dashboard = ("-m", "durabletask.cli", "dashboard", "--endpoint", f"127.0.0.1:{port}", "--port", "0")
            with process(*dashboard) as board:
                url = read_line(board, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
                page.goto(f"{url}hubs/default/instances/plain-1")
                expect(page.get_by_role("note")).to_contain_text("backend does not say which workers are connected")
                page.get_by_role("link", name="Workers").click()
                expect(page.get_by_role("main")).to_contain_text("Not available")
        finally:
            proxy.stop(None)


def test_cli_dashboard_requires_its_token(page: Any) -> None:
    with (
        emulator("--no-dashboard") as (address, _),
        process(
            "-m", "durabletask.cli", "dashboard", "--endpoint", address, "--port", "0", "--auth-token", "s3cret"
        ) as board,
    ):
        url = read_line(board, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
        assert get(f"{url}api/hubs")[0] == 401
        assert get(f"{url}api/hubs", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(f"{url}api/hubs", {"Authorization": "Bearer s3cret"})[0] == 200
        page.goto(url)
        expect(page.get_by_role("heading", name="Access token required")).to_be_visible()
        page.get_by_label("Token").fill("s3cret")
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_role("heading", name="Orchestrations")).to_be_visible()


def test_live_updates_report_a_change_made_before_the_stream_opened() -> None:
    """The page passes the digest of what it rendered; a change since then is reported at once."""
    with emulator("--dashboard-port", "0") as (address, proc):
        url = read_line(proc, r"dashboard on (http://127\.0\.0\.1:\d+/)").group(1)
        c = client.TaskHubGrpcClient(host_address=address)
        try:
            c.schedule_new_orchestration("unserved", instance_id="watched")
            _, rendered = get(f"{url}api/hubs/default/instance?id=watched")
            c.terminate_orchestration("watched")
            c.wait_for_orchestration_completion("watched", timeout=30)
        finally:
            c.close()
        live = f"{url}api/hubs/default/live?view=instance&id=watched&since={rendered['digest']}"
        with urllib.request.urlopen(live, timeout=30) as stream:
            assert stream.readline() == b"event: change\n"


def test_cli_dashboard_through_a_connection_string() -> None:
    """The managed-DTS path: the endpoint clients built from a connection string reach the hub."""
    with emulator("--no-dashboard") as (address, _):
        c = client.TaskHubGrpcClient(host_address=address)
        try:
            c.schedule_new_orchestration("unserved", instance_id="via-connection-string")
        finally:
            c.close()
        connection = f"Endpoint=http://{address};Authentication=None;TaskHub=default"
        with process("-m", "durabletask.cli", "dashboard", "--connection-string", connection, "--port", "0") as board:
            url = read_line(board, r"dashboard on (http://127\.0\.0\.1:\d+/) for default").group(1)
            status, listed = get(f"{url}api/hubs/default/orchestrations")
            assert status == 200 and [i["instance_id"] for i in listed["items"]] == ["via-connection-string"]
