"""What an assistant's graph looks like: its drawing (``/graph``), its JSON schemas (``/schemas``) and its subgraphs.

Everything is read from the compiled graph through LangGraph's public methods; a schema LangGraph cannot produce is
reported as ``null``, as LangGraph's server does.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from durabletask.extensions.langgraph._server.errors import bad_request

XRAY_MAX = 32
"""The deepest ``xray`` level accepted (subgraphs drawn that many levels down)."""


def parse_xray(raw: str | None) -> bool | int:
    """The ``xray`` query parameter: ``true``/``false`` or a depth from 0 to ``XRAY_MAX``."""
    if raw is None or raw == "":
        return False
    lowered = raw.strip().lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    try:
        depth = int(lowered)
    except ValueError:
        raise bad_request(f"query parameter 'xray' must be true, false or a depth, got {raw[:100]!r}") from None
    if not 0 <= depth <= XRAY_MAX:
        raise bad_request(f"query parameter 'xray' must be from 0 to {XRAY_MAX}, got {depth}")
    return depth


def _plain(value: Any) -> Any:
    """``value`` made JSON-safe (anything JSON cannot hold becomes its text)."""
    return json.loads(json.dumps(value, default=str))


def drawing(graph: Any, config: Mapping[str, Any], xray: bool | int) -> dict[str, Any]:
    """The graph's nodes and edges, as ``get_graph(...).to_json()`` gives them."""
    try:
        drawn = graph.get_graph(dict(config), xray=xray)
    except Exception as error:  # a graph that cannot be drawn is the caller's graph, not a server fault
        raise bad_request(f"the graph cannot be drawn: {type(error).__name__}: {error}") from None
    result: dict[str, Any] = _plain(drawn.to_json())
    return result


def _quietly(read: Callable[[], Any]) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(read())
    except Exception:  # LangGraph's server reports a schema it cannot build as null; so do we
        return None


def _from_hints(schema_type: Any) -> Any:
    """A JSON schema built from a state class's annotations, one field at a time (a field pydantic cannot describe
    becomes "any"), for the classes pydantic refuses whole (``typing.TypedDict`` before Python 3.12)."""
    from typing import get_type_hints

    from pydantic import ConfigDict, TypeAdapter, create_model

    fields: dict[str, Any] = {}
    for name, hint in get_type_hints(schema_type).items():
        try:
            TypeAdapter(hint, config=ConfigDict(arbitrary_types_allowed=True)).json_schema()
            fields[name] = (hint | None, None)
        except Exception:
            fields[name] = (Any, None)
    config = ConfigDict(arbitrary_types_allowed=True)
    model = create_model(getattr(schema_type, "__name__", "State"), __config__=config, **fields)
    return model.model_json_schema()


def _schema(graph: Any, read: Callable[[], Any], part: str) -> Any:
    """LangGraph's schema of the graph, or one built from the builder's class when LangGraph cannot build it."""
    found = _quietly(read)
    if found is not None:
        return found
    schema_type = getattr(getattr(graph, "builder", None), part, None)
    return _quietly(lambda: _from_hints(schema_type)) if schema_type is not None else None


def schemas(graph_id: str, graph: Any) -> dict[str, Any]:
    """The graph's schemas: input, output, state, config and context (``None`` where there is none)."""
    return {
        "graph_id": graph_id,
        "input_schema": _schema(graph, graph.get_input_jsonschema, "input_schema"),
        "output_schema": _schema(graph, graph.get_output_jsonschema, "output_schema"),
        "state_schema": _schema(graph, lambda: _state_schema(graph), "state_schema"),
        "config_schema": _quietly(graph.get_config_jsonschema),
        "context_schema": _schema(graph, graph.get_context_jsonschema, "context_schema"),
    }


def _state_schema(graph: Any) -> Any:
    builder = getattr(graph, "builder", None)
    state = getattr(builder, "state_schema", None)
    if builder is None or state is None or getattr(builder, "output_schema", None) is state:
        return graph.get_output_jsonschema()
    from pydantic import TypeAdapter

    return TypeAdapter(state).json_schema()


def subgraphs(graph_id: str, graph: Any, namespace: str | None, recurse: bool) -> dict[str, Any]:
    """The schemas of the graph's subgraphs by namespace (``a|b`` for nested ones), those under ``namespace`` only."""
    try:
        found = list(graph.get_subgraphs(namespace=namespace, recurse=recurse))
    except Exception as error:
        raise bad_request(f"the graph's subgraphs cannot be listed: {type(error).__name__}: {error}") from None
    return {name: schemas(graph_id, subgraph) for name, subgraph in found}
