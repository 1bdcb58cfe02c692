"""``checkpointer.ttl`` in ``langgraph.json``: the TTL of threads made without one, read as LangGraph reads it; any
other ``checkpointer`` key, or a wrong value, stops the server at startup naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from durabletask.extensions.langgraph._server.config import ConfigError, load_config


def _load(tmp_path: Path, checkpointer: Any) -> Any:
    (tmp_path / "graph.py").write_text("graph = None\n")
    config = {"graphs": {"g": "./graph.py:graph"}, "checkpointer": checkpointer}
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    return load_config(tmp_path)


def test_default_ttl_and_strategy(tmp_path: Path) -> None:
    ttl = {"strategy": "keep_latest", "default_ttl": 43200, "sweep_interval_minutes": 60, "sweep_limit": 1000}
    assert _load(tmp_path, {"ttl": ttl}).thread_ttl == {"strategy": "keep_latest", "ttl_minutes": 43200}
    assert _load(tmp_path, {"ttl": {"default_ttl": 1.5}}).thread_ttl == {"strategy": "delete", "ttl_minutes": 1.5}
    assert _load(tmp_path, {"ttl": {"strategy": "delete"}}).thread_ttl is None
    assert _load(tmp_path, {}).thread_ttl is None


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("checkpointer", "said"),
    [
        ({"path": "./saver.py:saver"}, "checkpointer.path is not supported"),
        ({"serde": {}}, "checkpointer.serde is not supported"),
        ([], "checkpointer must be an object"),
        ({"ttl": 5}, "checkpointer.ttl must be an object"),
        ({"ttl": {"default_ttl": -1}}, "more than 0"),
        ({"ttl": {"default_ttl": 1e12}}, "at most"),
        ({"ttl": {"default_ttl": "1d"}}, "number of minutes"),
        ({"ttl": {"strategy": "archive", "default_ttl": 5}}, "checkpointer.ttl.strategy"),
        ({"ttl": {"sweep_interval_minutes": 0}}, "sweep_interval_minutes"),
        ({"ttl": {"sweep_limit": True}}, "sweep_limit"),
        ({"ttl": {"default": 5}}, "checkpointer.ttl.default is unknown"),
    ],
)
def test_a_wrong_checkpointer_setting_stops_the_server(tmp_path: Path, checkpointer: Any, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, checkpointer)
    assert said in str(refused.value)
