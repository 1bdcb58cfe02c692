"""The pieces of the external-backend switch, on an in-process emulator: settings, task hubs, cleanup, dev.py."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import task
from durabletask.entities import EntityInstanceId
from tests.support.endpoint import Made
from tests.support.external.backend import ROOT, Backend, TaskHubs
from tests.support.external.plugin import SUITES

pytestmark = pytest.mark.local_only("tests the switch itself on an emulator of its own")


def test_options_win_over_the_environment_and_schemes_decide_tls() -> None:
    environ = {"DTS_TEST_BACKEND": "elsewhere:1", "DTS_TEST_TASKHUB": "theirs", "DTS_TEST_TOKEN": "t"}
    found = Backend.resolve(environ, backend="localhost:8080")
    assert found == Backend("http://localhost:8080", "theirs", "None", "t", "auto")
    assert Backend.resolve(environ) == Backend("http://elsewhere:1", "theirs", "None", "t", "auto")
    assert Backend.resolve({}) is None
    secure = Backend.resolve({}, backend="https://x.durabletask.io/", taskhub="h", taskhub_mode="shared")
    assert secure == Backend("https://x.durabletask.io", "h", "None", None, "shared")


def test_a_connection_string_gives_endpoint_hub_and_authentication() -> None:
    text = "Endpoint=https://s.westus2.durabletask.io;Authentication=DefaultAzure;TaskHub=orders"
    found = Backend.resolve({"DTS_TEST_CONNECTION_STRING": text})
    assert found == Backend("https://s.westus2.durabletask.io", "orders", "DefaultAzure", None, "auto")
    assert found.cli_args("orders") == ["--connection-string", found.connection_string("orders")]
    assert found.connection_string("h2") == "Endpoint=https://s.westus2.durabletask.io;Authentication=DefaultAzure;TaskHub=h2"


def test_a_bad_mode_is_named() -> None:
    with pytest.raises(ValueError, match="--taskhub-mode must be one of auto, fresh, exclusive, shared, got 'mine'"):
        Backend.resolve({}, backend="localhost:1", taskhub_mode="mine")


def test_child_processes_get_the_backend_and_a_fixed_token_through_their_environment() -> None:
    found = Backend("https://localhost:9", "hub", token="secret")
    env = found.child_env({"PATH": "/bin"})
    assert env["DTS_TEST_BACKEND"] == "https://localhost:9" and env["DTS_TEST_TOKEN"] == "secret"
    assert env["PYTHONPATH"].split(":")[0].endswith("tests/support/external/token_site")
    assert found.cli_args("hub") == ["--endpoint", "https://localhost:9", "--taskhub", "hub", "--token", "secret"]


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    # Not dynamic: a task hub exists only once CreateTaskHub made it, as on a scheduler that creates them.
    started = EmulatorServer(port=0, in_memory=True)
    started.start()
    yield started
    started.stop()


def test_fresh_mode_creates_a_hub_per_scenario_and_deletes_it(server: EmulatorServer) -> None:
    hubs = TaskHubs(Backend(f"http://localhost:{server.port}"))
    assert hubs.fresh and hubs.whole_hub_allowed
    name = hubs.open()
    assert name != "default"
    with hubs.backend.client(name) as c:
        assert c.get_orchestration_state("nothing") is None  # the hub exists
        hubs.release(name)
        with pytest.raises(grpc.RpcError) as error:
            c.get_orchestration_state("nothing")
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_shared_mode_uses_the_named_hub_and_skips_whole_hub_scenarios(server: EmulatorServer) -> None:
    hubs = TaskHubs(Backend(f"http://localhost:{server.port}", taskhub_mode="shared"))
    assert not hubs.fresh and not hubs.whole_hub_allowed
    assert hubs.open() == "default" and hubs.declined == "--taskhub-mode shared"
    exclusive = TaskHubs(Backend(f"http://localhost:{server.port}", taskhub_mode="exclusive"))
    assert not exclusive.fresh and exclusive.whole_hub_allowed


def count(ctx: Any, _: Any) -> Any:
    ctx.set_state((ctx.get_state(int) or 0) + 1)


def child(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.wait_for_external_event("never")


def parent(ctx: task.OrchestrationContext, key: str) -> Any:
    ctx.signal_entity(EntityInstanceId("count", key), "add")
    yield ctx.call_sub_orchestrator(child, instance_id=f"{ctx.instance_id}-child")


def _wait_until_exists(c: Any, instance_id: str) -> None:
    # Waiting for the start of an instance not made yet returns at once, so poll (bounded) until it exists.
    deadline = time.monotonic() + 30
    while c.get_orchestration_state(instance_id) is None:
        assert time.monotonic() < deadline, f"{instance_id} was never started"
        time.sleep(0.02)


def test_on_a_shared_hub_a_scenario_removes_what_its_clients_and_workers_made(server: EmulatorServer) -> None:
    backend = Backend(f"http://localhost:{server.port}", taskhub_mode="shared")
    hubs = TaskHubs(backend)
    made = Made()
    with backend.client("default") as watcher:
        before = set(watcher.list_instance_ids().items)
        w = backend.worker("default", [made.interceptor()])
        w.add_orchestrator(parent)
        w.add_orchestrator(child)
        w.add_entity(count)
        w.start()
        try:
            c = backend.client("default", [made.interceptor()])
            started = c.schedule_new_orchestration(parent, input="k1")
            c.signal_entity(EntityInstanceId("count", "k2"), "add")
            _wait_until_exists(watcher, f"{started}-child")
            # The worker may complete the parent's first turn before the client has read StartInstance's
            # answer, so the order of the two records is not fixed; only what was recorded is.
            assert sorted(made.instances) == sorted([started, f"{started}-child"])
            assert sorted(made.entities) == ["@count@k1", "@count@k2"]
            hubs.clean("default", made)  # while the worker runs, as the fixtures do
        finally:
            w.stop()
        assert set(watcher.list_instance_ids().items) == before
        assert watcher.get_orchestration_state(started) is None
        assert watcher.get_orchestration_state(f"{started}-child") is None
    # Our emulator keeps entities until their state is removed; the summary reports them.
    assert sorted(hubs.left_behind) == ["@count@k1", "@count@k2"]


def _dev() -> Any:
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dev_py_runs_the_external_suites_unless_paths_are_given() -> None:
    dev = _dev()
    suites = ["tests/e2e", "tests/interop", "tests/system/samples", "tests/system/recovery"]
    assert dev.pytest_args(["--backend", "http://localhost:8080", "-q"], {}) == [
        "--backend", "http://localhost:8080", "-q", *suites]
    assert dev.pytest_args(["-q"], {"DTS_TEST_BACKEND": "http://x:1"}) == ["-q", *suites]
    assert dev.pytest_args(["--backend=http://x:1", "tests/e2e/test_cli.py::test_x"], {}) == [
        "--backend=http://x:1", "tests/e2e/test_cli.py::test_x"]
    assert dev.pytest_args(["-q", "-k", "cli"], {}) == ["-q", "-k", "cli"]
    assert Path(ROOT / "tests" / "support" / "external" / "token_site" / "sitecustomize.py").exists()


def test_dev_py_and_the_switch_name_the_same_suite_folders_and_each_exists() -> None:
    assert set(_dev().EXTERNAL_SUITES) == set(SUITES.values())
    assert all((ROOT / folder).is_dir() for folder in SUITES.values())
