"""The pytest plugin, loaded through its entry point in a separate pytest run (as in a user's project): its fixtures,
the time-skipping marker and ini option, a reset per test, workers stopped after each test, and no cost unused."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import durabletask.testing.pytest_plugin as plugin

ROOT = Path(__file__).resolve().parents[2]

MONTH = '''
from datetime import timedelta
import pytest

def invoice(ctx, customer):
    yield ctx.create_timer(timedelta(days=30))
    return (yield ctx.call_activity(send_invoice, input=customer))

def send_invoice(ctx, customer):
    return f"invoiced {customer}"

@pytest.mark.durabletask_time_skipping
def test_a_month_long_workflow(durabletask_worker, durabletask_client):
    durabletask_worker(orchestrators=[invoice], activities=[send_invoice])
    instance_id = durabletask_client.schedule_new_orchestration(invoice, input="acme")
    state = durabletask_client.wait_for_orchestration_completion(instance_id, timeout=30)
    assert state.serialized_output == '"invoiced acme"'
'''


def run_pytest(tmp_path: Path, source: str, *args: str, ini: str | None = None) -> subprocess.CompletedProcess[str]:
    """A pytest run in ``tmp_path`` (outside this project's conftest and settings) on one test file."""
    (tmp_path / "test_generated.py").write_text(textwrap.dedent(source))
    if ini is not None:
        (tmp_path / "pytest.ini").write_text(textwrap.dedent(ini))
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS", "PYTEST_PLUGINS"}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_generated.py", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def passed(proc: subprocess.CompletedProcess[str], count: int) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{count} passed" in proc.stdout, proc.stdout[-4000:]


@pytest.mark.timeout(300)
def test_a_month_long_workflow_tested_in_ten_lines(tmp_path: Path) -> None:
    passed(run_pytest(tmp_path, MONTH), 1)


@pytest.mark.timeout(300)
def test_fixtures_reset_the_backend_and_stop_workers_between_tests(tmp_path: Path) -> None:
    source = '''
    import asyncio
    import pytest

    seen = {}

    def forever(ctx, _):
        yield ctx.wait_for_external_event("never")

    def test_leaves_a_running_instance_and_a_worker(durabletask_worker, durabletask_client, durabletask_backend):
        seen["worker"] = durabletask_worker(orchestrators=[forever])
        seen["id"] = durabletask_client.schedule_new_orchestration(forever)
        assert durabletask_client.wait_for_orchestration_start(seen["id"], timeout=30) is not None
        assert not durabletask_backend.time_skipping

    def test_starts_from_an_empty_backend_with_the_worker_stopped(durabletask_client):
        assert not seen["worker"].is_running
        assert durabletask_client.get_orchestration_state(seen["id"]) is None

    @pytest.mark.durabletask_time_skipping
    def test_marked_gets_the_skipping_backend(durabletask_backend):
        assert durabletask_backend.time_skipping

    @pytest.mark.asyncio
    async def test_the_async_client(durabletask_worker, durabletask_async_client):
        durabletask_worker(orchestrators=[forever])
        instance_id = await durabletask_async_client.schedule_new_orchestration(forever)
        state = await durabletask_async_client.wait_for_orchestration_start(instance_id, timeout=30)
        assert state.runtime_status.name == "RUNNING"

    def test_unstarted_worker(durabletask_worker):
        worker = durabletask_worker(orchestrators=[forever], start=False)
        assert not worker.is_running
        with pytest.raises(TypeError, match="do not pass host_address"):
            durabletask_worker(host_address="localhost:1")
    '''
    passed(run_pytest(tmp_path, source), 5)


@pytest.mark.timeout(300)
def test_the_ini_option_turns_time_skipping_on_and_the_marker_off(tmp_path: Path) -> None:
    source = """
    import pytest

    def test_by_the_ini_file(durabletask_backend):
        assert durabletask_backend.time_skipping

    @pytest.mark.durabletask_time_skipping(False)
    def test_marked_off(durabletask_backend):
        assert not durabletask_backend.time_skipping

    @pytest.mark.durabletask_time_skipping("yes")
    def test_marked_wrongly(durabletask_backend):
        pass
    """
    proc = run_pytest(tmp_path, source, ini="[pytest]\ndurabletask_time_skipping = true\n")
    assert "2 passed" in proc.stdout and "1 error" in proc.stdout, proc.stdout[-4000:]
    assert "takes True or False, not 'yes'" in proc.stdout


@pytest.mark.timeout(300)
def test_a_session_that_does_not_use_the_fixtures_loads_nothing_of_the_sdk(tmp_path: Path) -> None:
    source = """
    import sys

    def test_unused():
        assert "durabletask.testing.pytest_plugin" in sys.modules  # loaded through its entry point
        heavy = [m for m in ("grpc", "dtscale_emulator.server", "durabletask.worker") if m in sys.modules]
        assert heavy == []
    """
    # Warnings are errors, as in this suite: the plugin adds none (pytest-asyncio's own is settled by its option).
    ini = "[pytest]\nfilterwarnings = error\nasyncio_default_fixture_loop_scope = function\n"
    passed(run_pytest(tmp_path, source, ini=ini), 1)


def _fixture_names(path: Path) -> set[str]:
    """The names of the fixtures a file defines (a ``name=`` given to the decorator, else the function's)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr == "fixture":
                    given = [k.value for k in getattr(decorator, "keywords", []) if k.arg == "name"]
                    names.add(given[0].value if given and isinstance(given[0], ast.Constant) else node.name)
    return names


def test_the_plugins_fixture_names_clash_with_none_of_this_suites() -> None:
    ours = _fixture_names(Path(plugin.__file__))
    assert ours == {
        "durabletask_backends",
        "durabletask_backend",
        "durabletask_client",
        "durabletask_async_client",
        "durabletask_worker",
    }
    suite = set().union(*(_fixture_names(p) for p in (ROOT / "tests").rglob("*.py")))
    assert ours & suite == set()
