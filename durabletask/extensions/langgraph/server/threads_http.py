"""What the thread and run routes share: fields of a body and parameters of a query, checked, and answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph.server.errors import bad_request

#: The most items one page of a listing returns.
MAX_LIMIT = 1000


def answer(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON answer."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return web.Response(text=text, status=status, content_type="application/json", headers=headers)


def no_content() -> web.Response:
    return web.Response(status=204)


def field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    """``body[name]`` if it has the kind asked (``None`` reads as the default); 422 naming it otherwise."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise bad_request(f"'{name}' must be {_kind_name(kind)}, not a boolean")
    if not isinstance(value, kind):
        raise bad_request(f"'{name}' must be {_kind_name(kind)}, not {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "an integer",
        bool: "true or false",
        float: "a number",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def strings(body: Mapping[str, Any], name: str) -> list[str] | None:
    """A list of strings (``None`` when absent)."""
    value = field(body, name, list)
    if value is not None and not all(isinstance(v, str) for v in value):
        raise bad_request(f"'{name}' must be a list of strings")
    return None if value is None else [str(v) for v in value]


def choice(body: Mapping[str, Any], name: str, choices: tuple[str, ...], default: Any = None) -> Any:
    value = body.get(name)
    if value is None:
        return default
    if value not in choices:
        raise bad_request(f"'{name}' must be one of {', '.join(choices)}, not {value!r}")
    return value


def count(value: Any, name: str, default: int, *, low: int = 0, high: int = MAX_LIMIT) -> int:
    """An integer parameter (body field or query text) within ``low..high``."""
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise bad_request(f"'{name}' must be an integer, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"'{name}' must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise bad_request(f"'{name}' must be from {low} to {high}, not {value}")
    return value


def flag(value: Any, name: str) -> bool:
    """A boolean parameter: a JSON boolean, or query text ``true``/``false``/``1``/``0``."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "1", "false", "0", ""):
        return value.lower() in ("true", "1")
    raise bad_request(f"'{name}' must be true or false, not {value!r}")
