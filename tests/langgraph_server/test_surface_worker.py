"""The worker side of a project: what ``register_project`` puts on a worker, graphs and factories alike."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("langgraph_sdk.runtime")

from durabletask.extensions.langgraph import activity_name, orchestrator_name
from durabletask.extensions.langgraph._server.config import GraphSpecError, load_config
from durabletask.extensions.langgraph._server.config_graphs import module_name_for
from durabletask.extensions.langgraph._server.crons_worker import CRON_FIRE
from durabletask.extensions.langgraph._server.launch_worker import register_project, run_config
from durabletask.worker import TaskHubGrpcWorker
from tests.langgraph_server.support_surface import write_project


@pytest.fixture(autouse=True)
def _forget_the_project(tmp_path: Path) -> Iterator[None]:
    yield
    sys.modules.pop(module_name_for((tmp_path / "graphs.py").resolve()), None)


class RecordingWorker:
    """A real (unstarted) worker that also notes the names registered on it."""

    def __init__(self) -> None:
        self.real = TaskHubGrpcWorker(host_address="127.0.0.1:9")
        self.activities: list[str] = []
        self.orchestrators: list[str] = []

    def add_activity(self, fn: Any, *, name: str | None = None) -> Any:
        self.activities.append(name or fn.__name__)
        return self.real.add_activity(fn, name=name)

    def add_orchestrator(self, fn: Any, *, name: str | None = None, **options: Any) -> Any:
        self.orchestrators.append(name or fn.__name__)
        return self.real.add_orchestrator(fn, name=name, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_every_graph_and_factory_is_registered(tmp_path: Path) -> None:
    project = load_config(write_project(tmp_path))
    worker = RecordingWorker()
    with register_project(worker, project, connect=lambda: None):
        assert {orchestrator_name("echo"), orchestrator_name("factory")} <= set(worker.orchestrators)
        for graph in ("echo", "factory"):
            assert activity_name(graph, "echo") in worker.activities
            assert activity_name(graph, "__start__") in worker.activities
        # each activity name once: a factory's nodes are not registered twice
        assert len(worker.activities) == len(set(worker.activities))
        # the route modules' parts: the cron firing needs a client maker, and gets one
        assert CRON_FIRE in worker.activities


def test_without_a_client_maker_no_firing_activity(tmp_path: Path) -> None:
    project = load_config(write_project(tmp_path))
    worker = RecordingWorker()
    with register_project(worker, project):
        assert CRON_FIRE not in worker.activities


def test_a_factory_node_is_built_with_the_runs_config() -> None:
    settings = {"configurable": {"user_id": "u"}, "thread_id": "t-9", "recursion_limit": 7, "context": {"a": 1}}
    assert run_config(settings) == {"configurable": {"user_id": "u", "thread_id": "t-9"}, "recursion_limit": 7}


@pytest.mark.adversarial
def test_a_factory_that_fails_at_start_names_its_graph(tmp_path: Path) -> None:
    project = load_config(write_project(tmp_path, {"graphs": {"bad": "./graphs.py:failing"}}))
    with pytest.raises(GraphSpecError) as raised:
        register_project(RecordingWorker(), project)
    assert "graphs.bad: the factory failed when the worker built" in str(raised.value)
    assert "RuntimeError: no model key in this environment" in str(raised.value)
