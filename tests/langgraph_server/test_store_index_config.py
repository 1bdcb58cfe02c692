"""``store.index`` of ``langgraph.json``: read and loaded as LangGraph's server loads it (``dims``, ``embed`` as a
path, a module or a provider string, ``fields``); a config the server cannot serve stops it at startup, saying why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from durabletask.extensions.langgraph._server.config import ConfigError, load_config
from durabletask.extensions.langgraph._server.config_store import StoreIndexSettings
from durabletask.extensions.langgraph._server.store_index import EmbeddingError, StoreIndex, rank

EMBED_SOURCE = """
def embed(texts):
    return [[float(len(t)), 1.0, 0.5] for t in texts]


async def aembed(texts):
    return [[1.0, float(len(t)), 0.0] for t in texts]


def short(texts):
    return [[1.0, 2.0] for t in texts]


def few(texts):
    return [[1.0, 2.0, 3.0]]


def text(texts):
    return "not vectors"


def nan(texts):
    return [[float("nan"), 1.0, 1.0] for t in texts]


def broken(texts):
    raise RuntimeError("no model here")


async def slow(texts):
    import asyncio

    if texts != ["store.index probe"]:
        await asyncio.sleep(30)
    return [[1.0, 1.0, 1.0] for t in texts]


def drifting(texts):
    return [[1.0, 1.0, 1.0] if texts == ["store.index probe"] else [1.0] for t in texts]


class Letters:
    def embed_documents(self, texts):
        return [[float(len(t)), 2.0, 0.0] for t in texts]

    def embed_query(self, text):
        return self.embed_documents([text])[0]


try:
    from langchain_core.embeddings import Embeddings

    LETTERS = type("LettersEmbeddings", (Letters, Embeddings), {})()
except ImportError:
    LETTERS = None

NOT_A_FUNCTION = 3
"""


GRAPH_SOURCE = """
from typing import TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict):
    n: int


builder = StateGraph(State)
builder.add_node("step", lambda state: {"n": state["n"] + 1})
builder.add_edge(START, "step")
graph = builder.compile()
"""


def _project(tmp_path: Path, store: Any) -> Path:
    (tmp_path / "graph.py").write_text("graph = None\n")
    (tmp_path / "embeddings.py").write_text(EMBED_SOURCE)
    config = {"graphs": {"g": "./graph.py:graph"}, "store": store}
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    return tmp_path


def test_an_index_is_read_with_its_defaults(tmp_path: Path) -> None:
    project = load_config(_project(tmp_path, {"index": {"dims": 3, "embed": "./embeddings.py:embed"}}))
    settings = project.store_index
    assert settings is not None and settings.dims == 3 and settings.fields == ("$",)
    assert settings.embed == ("path", str((tmp_path / "embeddings.py").resolve()), "embed")
    fields = {"index": {"dims": 3, "embed": "embeddings.py:aembed", "fields": ["text", "tags[*].name"]}}
    assert load_config(_project(tmp_path, fields)).store_index == StoreIndexSettings(
        dims=3, embed=("path", str((tmp_path / "embeddings.py").resolve()), "aembed"), fields=("text", "tags[*].name")
    )
    module = load_config(_project(tmp_path, {"index": {"dims": 3, "embed": "my_pkg.embeddings:embed"}}))
    assert module.store_index is not None and module.store_index.embed == ("module", "my_pkg.embeddings", "embed")
    assert load_config(_project(tmp_path, {})).store_index is None


@pytest.mark.parametrize(
    ("store", "said"),
    [
        ({"ttl": {"default_ttl": 5}}, "store.ttl defaults are not supported"),
        ({"vectors": {}}, "store.vectors is unknown"),
        ([], "key 'store' must be an object"),
        ({"index": {"dims": 3}}, "store.index.embed must be"),
        ({"index": {"dims": 0, "embed": "./embeddings.py:embed"}}, "store.index.dims must be a whole number"),
        ({"index": {"dims": True, "embed": "./embeddings.py:embed"}}, "store.index.dims must be a whole number"),
        ({"index": {"dims": 10**6, "embed": "./embeddings.py:embed"}}, "from 1 to 4096"),
        ({"index": {"dims": 3, "embed": "./missing.py:embed"}}, "file './missing.py' does not exist"),
        ({"index": {"dims": 3, "embed": "./embeddings.py:no-name"}}, "is not a function name"),
        ({"index": {"dims": 3, "embed": "not a module:x"}}, "is neither 'module:function'"),
        ({"index": {"dims": 3, "embed": "./embeddings.py:embed", "fields": "text"}}, "store.index.fields must be"),
        ({"index": {"dims": 3, "embed": "./embeddings.py:embed", "fields": ["a["]}}, "unbalanced brackets"),
        ({"index": {"dims": 3, "embed": "./embeddings.py:embed", "extra": 1}}, "store.index.extra is unknown"),
        (
            {"index": {"dims": 1536, "embed": "openai:text-embedding-3-small"}},
            r"needs a model of the provider 'openai'.*run: pip install .*langchain-openai",
        ),
    ],
)
def test_a_bad_store_config_is_refused_naming_the_key(tmp_path: Path, store: Any, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        load_config(_project(tmp_path, store))


def _settings(tmp_path: Path, embed: str, dims: int = 3) -> StoreIndexSettings:
    project = load_config(_project(tmp_path, {"index": {"dims": dims, "embed": embed}}))
    assert project.store_index is not None
    return project.store_index


@pytest.mark.parametrize(
    ("embed", "dims", "said"),
    [
        ("./embeddings.py:missing", 3, "has no attribute 'missing'"),
        ("./embeddings.py:NOT_A_FUNCTION", 3, "is a int, not a function"),
        ("./embeddings.py:short", 3, "a vector of 2 numbers; store.index.dims is 3"),
        ("./embeddings.py:embed", 4, "a vector of 3 numbers; store.index.dims is 4"),
        ("./embeddings.py:text", 3, "returned str for 1 texts"),
        ("./embeddings.py:nan", 3, "NaN or infinity"),
        ("./embeddings.py:broken", 3, r"failed: RuntimeError\(.no model here.\) \(on a probe text\)"),
        ("no_such_module_for_embeddings:embed", 3, "cannot import module 'no_such_module_for_embeddings'"),
    ],
)
def test_an_embed_function_that_cannot_serve_is_refused_at_load(
    tmp_path: Path, embed: str, dims: int, said: str
) -> None:
    with pytest.raises(EmbeddingError, match=said):
        StoreIndex(_settings(tmp_path, embed, dims))


async def test_sync_and_async_functions_embed_fields_as_langgraph_reads_them(tmp_path: Path) -> None:
    for name, first in (("embed", [5.0, 1.0, 0.5]), ("aembed", [1.0, 5.0, 0.0])):
        index = StoreIndex(_settings(tmp_path, f"./embeddings.py:{name}"))
        value = {"text": "hello", "tags": [{"name": "ab"}, {"name": "cde"}], "n": 3}
        vectors = await index.embed_value(value, ["text", "tags[*].name", "missing"])
        assert list(vectors) == ["text", "tags[*].name.0", "tags[*].name.1"] and vectors["text"] == first
        whole = await index.embed_value(value, None)
        assert list(whole) == ["$"] and len(whole["$"]) == 3
        assert len(await index.embed_query("q" * 7)) == 3
    letters = StoreIndex(_settings(tmp_path, "./embeddings.py:LETTERS"))
    assert await letters.embed_value({"text": "abcd"}, ["text"]) == {"text": [4.0, 2.0, 0.0]}
    with pytest.raises(ValueError, match="texts to embed; at most"):
        await index.embed_value({"many": ["t"] * 30_000}, ["many[*]"])
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        await StoreIndex(_settings(tmp_path, "./embeddings.py:few")).embed_value({"a": "x", "b": "yy"}, ["a", "b"])


def test_rank_pages_scored_items_then_fills_with_unscored_ones() -> None:
    records = [
        {"key": "a", "vectors": {"x": [1.0, 0.0]}},
        {"key": "none"},
        {"key": "b", "vectors": {"x": [0.0, 1.0], "y": [1.0, 1.0]}},
        {"key": "zero", "vectors": {"x": [0.0, 0.0]}},
    ]
    ranked = [(r["key"], None if s is None else round(s, 6)) for r, s in rank(records, [1.0, 0.0], limit=10, offset=0)]
    assert ranked == [("a", 1.0), ("b", round(0.5**0.5, 6)), ("zero", 0.0), ("none", None)]
    assert [r["key"] for r, _ in rank(records, [1.0, 0.0], limit=2, offset=1)] == ["b", "zero"]
    assert [r["key"] for r, _ in rank(records, [1.0, 0.0], limit=2, offset=3)] == ["none"]


def test_the_cli_refuses_an_index_it_cannot_load_at_startup(tmp_path: Path) -> None:
    from tests.langgraph_server.support_surface import run_cli_once

    (tmp_path / "graph.py").write_text(GRAPH_SOURCE)
    (tmp_path / "embeddings.py").write_text(EMBED_SOURCE)
    for embed, said in (("./embeddings.py:short", "store.index.dims is 3"), ("./embeddings.py:gone", "no attribute")):
        config = {"graphs": {"g": "./graph.py:graph"}, "store": {"index": {"dims": 3, "embed": embed}}}
        (tmp_path / "langgraph.json").write_text(json.dumps(config))
        refused = run_cli_once(["langgraph", "worker", "--config", str(tmp_path)])
        assert refused.returncode == 1 and said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr


async def test_an_embed_function_that_hangs_or_drifts_fails_the_call_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from durabletask.extensions.langgraph._server import store, store_index
    from durabletask.extensions.langgraph._server.errors import HttpError

    monkeypatch.setattr(store_index, "EMBED_TIMEOUT", 0.2)
    hanging = StoreIndex(_settings(tmp_path, "./embeddings.py:slow"))
    with pytest.raises(EmbeddingError, match="did not answer within 0 s"):
        await hanging.embed_query("anything")
    drifting = StoreIndex(_settings(tmp_path, "./embeddings.py:drifting"))
    with pytest.raises(HttpError) as failed:
        await store.embed_put(drifting, {"text": "x"}, None)
    assert failed.value.status == 500 and "a vector of 1 numbers; store.index.dims is 3" in failed.value.detail
    with pytest.raises(HttpError) as refused:
        await store.embed_put(drifting, {"text": "x"}, ["a{"])
    assert refused.value.status == 422 and "unbalanced brackets" in refused.value.detail
    assert await store.embed_put(drifting, {"text": "x"}, False) is None
    assert await store.embed_query(drifting, "") is None and await store.embed_put(None, {"a": "b"}, None) is None
