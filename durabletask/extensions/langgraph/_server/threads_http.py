"""What the thread and run routes share: fields of a body and parameters of a query, checked, and answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.errors import bad_request, json_body

#: The most items one page of a listing returns.
MAX_LIMIT = 1000
#: The deepest nesting of objects and lists a body may have (LangGraph's serializer and JSON both recurse).
MAX_DEPTH = 100


def _text_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json(value: Any, where: str = "the request body") -> None:
    """422 for JSON no thread can keep: nesting deeper than ``MAX_DEPTH``, or a lone surrogate in a string or key."""
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            if not _text_ok(item):
                raise bad_request(f"{path} holds a lone surrogate (e.g. \\ud800), which no UTF-8 text can hold")
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth >= MAX_DEPTH:
            raise bad_request(
                f"{where} is nested more than {MAX_DEPTH} levels deep (at {path}); the limit is {MAX_DEPTH}"
            )
        if isinstance(item, dict):
            for key, child in item.items():
                if not _text_ok(str(key)):
                    raise bad_request(f"{path} has a key holding a lone surrogate, which no UTF-8 text can hold")
                stack.append((child, depth + 1, f"{path}.{str(key)[:40]}" if depth else f"'{str(key)[:40]}'"))
        else:
            stack.extend((child, depth + 1, f"{path}[{n}]") for n, child in enumerate(item))


async def read_body(request: web.Request, *, required: bool = True) -> dict[str, Any]:
    """The request's JSON object (``errors.json_body``), checked by :func:`check_json`."""
    try:
        body = await json_body(request, required=required)
    except RecursionError:
        raise bad_request(f"the request body is nested too deeply to read; the limit is {MAX_DEPTH} levels") from None
    except ValueError as error:  # e.g. an integer of more digits than Python reads (4,300)
        raise bad_request(f"the request body holds a number too long to read: {str(error)[:120]}") from None
    check_json(body)
    return body


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
