"""``langgraph.json`` read as LangGraph reads it: graphs and factories, dependencies, env, ``http.cors``; bad
configurations refused with the key named."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk.runtime")

from durabletask.extensions.langgraph._server.config import (
    ConfigError,
    GraphSpecError,
    apply_environment,
    load_config,
)
from durabletask.extensions.langgraph._server.config_graphs import module_name_for
from tests.langgraph_server.support_surface import write_project


@pytest.fixture(autouse=True)
def _restore_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The test project's modules (``graphs``, ...) and path entries are forgotten after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def _project(tmp_path: Path, **overrides: Any) -> Path:
    config: dict[str, Any] = {"graphs": {"echo": "./graphs.py:graph"}}
    config.update(overrides)
    return write_project(tmp_path, config)


def test_the_suite_shape_is_read(tmp_path: Path) -> None:
    path = write_project(tmp_path)
    project = load_config(path)
    assert list(project.graphs) == ["echo", "factory"]
    assert project.dependencies == (tmp_path.resolve(),)
    assert project.env == {"SURFACE_TEST_VAR": "from-config"}
    assert project.cors is not None and project.cors.allows("https://app.example")
    assert not project.cors.allows("https://evil.example")
    assert project.cors.allow_credentials
    # a folder stands for its langgraph.json
    assert load_config(tmp_path).path == path.resolve()


def test_graph_kinds(tmp_path: Path) -> None:
    project = load_config(_project(tmp_path, graphs={"g": "./graphs.py:graph", "f": "./graphs.py:make_graph"}))
    assert not project.graphs["g"].is_factory
    assert project.graphs["f"].is_factory


def test_apply_environment_puts_dependencies_on_the_path_and_keeps_set_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (tmp_path / ".env").write_text("# comment\nexport A_VAR='quoted'\nB_VAR=plain # trailing\nC_VAR=\"x=y\"\n")
    monkeypatch.setenv("C_VAR", "already")
    monkeypatch.delenv("A_VAR", raising=False)
    monkeypatch.delenv("B_VAR", raising=False)
    project = load_config(_project(tmp_path, dependencies=["./lib"], env=".env"))
    assert project.env == {"A_VAR": "quoted", "B_VAR": "plain", "C_VAR": "x=y"}
    apply_environment(project)
    assert str(lib.resolve()) in sys.path
    assert (os.environ["A_VAR"], os.environ["B_VAR"], os.environ["C_VAR"]) == ("quoted", "plain", "already")


def test_a_src_layout_dependency_puts_its_src_on_the_path(tmp_path: Path) -> None:
    package = tmp_path / "mylib"
    (package / "src" / "surface_src_pkg").mkdir(parents=True)
    (package / "pyproject.toml").write_text("[project]\nname = 'surface-src-pkg'\n")
    (package / "src" / "surface_src_pkg" / "__init__.py").write_text("from graphs import graph\n")
    project = load_config(_project(tmp_path, dependencies=[".", "./mylib"], graphs={"g": "surface_src_pkg:graph"}))
    assert project.dependencies == (tmp_path.resolve(), package.resolve(), (package / "src").resolve())
    apply_environment(project)
    assert project.graphs["g"].load() is not None


def test_module_references_and_dotted_names_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(tmp_path))
    package = tmp_path / "surface_pkg_a"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(
        "from langgraph.graph import StateGraph\nfrom .helper import VALUE\nfrom graphs import graph\n"
    )
    (package / "helper.py").write_text("VALUE = 1\n")
    write_project(tmp_path, {"graphs": {"m": "surface_pkg_a.agent:graph", "p": "./surface_pkg_a/agent.py:graph"}})
    project = load_config(tmp_path)
    assert project.graphs["m"].file is None
    assert module_name_for((package / "agent.py").resolve()) == "surface_pkg_a.agent"
    # the file path imports it the ordinary way (its relative import works), as the same module
    assert project.graphs["p"].load() is project.graphs["m"].load()


async def test_factories_of_every_shape(tmp_path: Path) -> None:
    entries = {
        name: f"./graphs.py:{name}"
        for name in ("make_graph", "no_args", "config_only", "runtime_only", "managed", "uncompiled")
    }
    project = load_config(_project(tmp_path, graphs=entries))
    config = {"configurable": {"thread_id": "t-1"}}
    results = {}
    for name, spec in project.graphs.items():
        async with spec.open("threads.create_run", config=config, context={"user": "ann"}) as graph:
            results[name] = await graph.ainvoke({"text": "hi"})
    assert results["make_graph"] == {
        "text": "hi echoed",
        "access_context": "threads.create_run",
        "is_for_execution": True,
        "thread": "t-1",
        "user": "ann",
    }
    assert results["no_args"]["access_context"] == "none"
    assert results["config_only"]["thread"] == "t-1"
    assert results["runtime_only"]["access_context"] == "threads.create_run"
    assert results["managed"]["access_context"] == "threads.create_run"
    assert results["uncompiled"] == {"text": "plain"}
    module = sys.modules[module_name_for((tmp_path / "graphs.py").resolve())]
    assert module.OPENED == module.CLOSED == ["threads.create_run"]


async def test_a_read_runtime_has_no_execution_and_no_context(tmp_path: Path) -> None:
    project = load_config(_project(tmp_path, graphs={"f": "./graphs.py:make_graph"}))
    async with project.graphs["f"].open("assistants.read", context={"user": "ann"}) as graph:
        out = await graph.ainvoke({"text": ""})
    assert (out["access_context"], out["is_for_execution"], out["user"]) == ("assistants.read", False, "")


async def test_a_graph_loses_its_checkpointer_and_gets_the_store(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    (tmp_path / "saver.py").write_text(
        "from langgraph.checkpoint.memory import InMemorySaver\nfrom graphs import _build\n"
        "graph = _build({}).copy(update={'checkpointer': InMemorySaver()})\n"
    )
    project = load_config(_project(tmp_path, graphs={"s": "./saver.py:graph"}, dependencies=["."]))
    apply_environment(project)
    assert isinstance(project.graphs["s"].load().checkpointer, InMemorySaver)
    store = InMemoryStore()
    async with project.graphs["s"].open("threads.read", store=store) as graph:
        assert graph.checkpointer is None
        assert graph.store is store


BAD_CONFIGS: list[tuple[Any, str]] = [
    ("[1, 2]", "must be a JSON object"),
    ('{"graphs": ', "not valid JSON"),
    ({}, "key 'graphs' must be an object"),
    ({"graphs": {}}, "key 'graphs' must be an object"),
    ({"graphs": ["./graphs.py:graph"]}, "key 'graphs' must be an object"),
    ({"graphs": {"a:b": "./graphs.py:graph"}}, "graphs.a:b"),
    ({"graphs": {"x" * 80: "./graphs.py:graph"}}, "the limit is"),
    ({"graphs": {"é": "./graphs.py:graph"}}, "printable ASCII"),
    ({"graphs": {"g": "./graphs.py"}}, "graphs.g: expected 'path/to/file.py:attribute'"),
    ({"graphs": {"g": 7}}, "graphs.g: expected"),
    ({"graphs": {"g": "./graphs.py:not-a-name"}}, "does not end in ':attribute'"),
    ({"graphs": {"g": "./missing.py:graph"}}, "graphs.g: file './missing.py' does not exist"),
    ({"graphs": {"g": "./src/agent.ts:graph"}}, "graphs.g: only Python graphs are served here"),
    ({"graphs": {"g": {"path": "./graphs.py:graph", "tags": []}}}, "graphs.g: unknown key 'tags'"),
    ({"graphs": {"g": {"path": "./graphs.py:graph", "description": 3}}}, "graphs.g.description must be a string"),
    ({"graphs": {"g": "./graphs.py:graph"}, "dependencies": "."}, "key 'dependencies' must be a list"),
    ({"graphs": {"g": "./graphs.py:graph"}, "dependencies": ["./nowhere"]}, "dependencies[0]: folder './nowhere'"),
    (
        {"graphs": {"g": "./graphs.py:graph"}, "dependencies": ["surely-not-installed-pkg-xyz>=1"]},
        "dependencies[0]: package 'surely-not-installed-pkg-xyz' is not installed",
    ),
    ({"graphs": {"g": "./graphs.py:graph"}, "env": {"A": 1}}, "env.A must be a string"),
    ({"graphs": {"g": "./graphs.py:graph"}, "env": {"A=B": "1"}}, "cannot name an environment variable"),
    ({"graphs": {"g": "./graphs.py:graph"}, "env": ["A"]}, "key 'env' must be an object"),
    ({"graphs": {"g": "./graphs.py:graph"}, "env": "./no.env"}, "env: cannot read"),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": []}, "key 'http' must be an object"),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": {"app": "./app.py:app"}}, "http.app is not supported"),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"allow_origins": "*"}}}, "http.cors.allow_origins must"),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"origins": []}}}, "http.cors.origins is unknown"),
    (
        {"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"allow_origin_regex": "("}}},
        "http.cors.allow_origin_regex is not a regular expression",
    ),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"max_age": -1}}}, "http.cors.max_age"),
    ({"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"allow_credentials": "yes"}}}, "allow_credentials"),
    ({"graphs": {"g": "./graphs.py:graph"}, "auth": {"path": "./auth.py:auth"}}, "key 'auth': custom auth"),
    ({"graphs": {"g": "./graphs.py:graph"}, "grpahs": {}}, "unknown key 'grpahs'"),
]


@pytest.mark.adversarial
@pytest.mark.parametrize(("config", "message"), BAD_CONFIGS)
def test_a_bad_configuration_is_refused_naming_the_key(tmp_path: Path, config: Any, message: str) -> None:
    write_project(tmp_path)
    path = tmp_path / "langgraph.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert message in str(raised.value)
    assert str(path.resolve()) in str(raised.value)


@pytest.mark.adversarial
def test_an_env_file_line_without_a_value_is_named(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GOOD=1\nthis is not a variable\n")
    with pytest.raises(ConfigError, match="line 2: expected KEY=value"):
        load_config(_project(tmp_path, env=".env"))


@pytest.mark.adversarial
def test_a_missing_file_and_a_folder_without_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match=r"langgraph\.json: cannot read"):
        load_config(tmp_path)


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("./graphs.py:missing", "has no attribute 'missing'"),
        ("./graphs.py:not_a_graph", "is a int, neither a graph nor a function"),
        ("./broken.py:graph", "importing ./broken.py failed: ZeroDivisionError"),
        ("surely_not_a_module_xyz:graph", "importing surely_not_a_module_xyz failed: ModuleNotFoundError"),
    ],
)
def test_a_graph_that_cannot_load_is_named(tmp_path: Path, entry: str, message: str) -> None:
    (tmp_path / "broken.py").write_text("1 / 0\n")
    project = load_config(_project(tmp_path, graphs={"g": entry}))
    with pytest.raises(GraphSpecError, match=r"graphs\.g") as raised:
        project.graphs["g"].load()
    assert message in str(raised.value)


@pytest.mark.adversarial
async def test_a_factory_that_wants_too_much_or_gives_no_graph(tmp_path: Path) -> None:
    (tmp_path / "odd.py").write_text("def gives_text(config):\n    return 'text'\n")
    project = load_config(_project(tmp_path, graphs={"t": "./graphs.py:three", "o": "./odd.py:gives_text"}))
    with pytest.raises(GraphSpecError, match=r"graphs.t: a graph factory takes at most \(config, runtime\)"):
        async with project.graphs["t"].open("threads.read"):
            pass
    with pytest.raises(GraphSpecError, match=r"graphs\.o: the factory returned a str, not a graph"):
        async with project.graphs["o"].open("threads.read"):
            pass
    with pytest.raises(ValueError, match="access_context must be one of"):
        async with project.graphs["o"].open("threads.delete"):
            pass
