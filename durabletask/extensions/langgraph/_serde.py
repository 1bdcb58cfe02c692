"""LangGraph values in DTS payloads: LangGraph's own serializer, its bytes in base64 inside JSON."""

from __future__ import annotations

import base64
import functools
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from durabletask.extensions.langgraph._errors import StateSerializationError


@functools.cache
def serializer() -> JsonPlusSerializer:
    # Every module allowed explicitly: graph states hold the users' own types (pydantic models, dataclasses),
    # as they do in any LangGraph checkpointer, and the payloads come only from this task hub.
    return JsonPlusSerializer(allowed_msgpack_modules=True)


def dump(value: Any, what: str) -> dict[str, str]:
    """``value`` as a JSON object; ``what`` names it in the error when it cannot be written."""
    try:
        kind, data = serializer().dumps_typed(value)
    except Exception as exc:  # the serializer raises whatever its encoder raised
        raise StateSerializationError(f"{what} cannot be serialized by LangGraph's serializer: {exc}") from exc
    return {"t": kind, "b": base64.b64encode(data).decode("ascii")}


def load(payload: dict[str, str]) -> Any:
    """The value :func:`dump` wrote."""
    return serializer().loads_typed((payload["t"], base64.b64decode(payload["b"])))
