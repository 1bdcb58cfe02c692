"""Reading the JSON bodies and query parameters of the resource routes (store, assistants, crons).

Every helper refuses a bad value with a 422 naming the field and what it accepts, so no malformed request reaches
the task hub or turns into a 500.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.errors import bad_request, json_value

METADATA_MAX_BYTES = 64 * 1024
"""The largest ``metadata`` (and ``config``, ``context``) object a record takes, in bytes of JSON."""
TEXT_MAX_CHARS = 1024
"""The longest name, description or other short text field."""
PAGE_MAX = 1000
"""The largest ``limit`` of a search."""
OFFSET_MAX = 1_000_000
"""The largest ``offset`` of a search."""


def now_iso() -> str:
    """The current time as LangGraph's server writes it: ISO 8601 in UTC with an offset."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def json_size(value: Any) -> int:
    """The size of ``value`` as UTF-8 JSON, in bytes."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


async def read_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body).

    Raises:
        HttpError: 422 when the body is not JSON or not an object, or holds text no UTF-8 can (a lone surrogate).
    """
    if not request.body_exists:
        return {}
    raw = await request.read()
    if not raw.strip():
        return {}
    body = json_value(raw, parse_constant=_no_constant, parse_float=_finite)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, got {_kind(body)}")
    check_text(body)
    return body


def _no_constant(name: str) -> Any:
    raise bad_request(f"the request body holds {name}, which JSON does not have")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise bad_request(f"the request body holds the number {text[:40]} (out of range), which JSON does not have")
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(body: Mapping[str, Any]) -> None:
    """422 naming the field whose text (a value or a key, at any depth) holds a lone surrogate (``"\\ud800"``):
    JSON can escape one, but no UTF-8 text, and so no record in the task hub, can hold it."""
    stack: list[tuple[Any, str]] = [(body, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _utf8(item):
                raise bad_request(f"field '{path}' holds a lone surrogate (e.g. \\ud800), which UTF-8 cannot hold")
        elif isinstance(item, dict):
            for key, child in item.items():
                name = str(key)
                if not _utf8(name):
                    where = f"field '{path}'" if path else "the request body"
                    raise bad_request(f"{where} has a key holding a lone surrogate, which UTF-8 cannot hold")
                stack.append((child, f"{path}.{name[:100]}" if path else name[:100]))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def text(
    body: Mapping[str, Any],
    name: str,
    *,
    required: bool = False,
    max_chars: int = TEXT_MAX_CHARS,
    allow_empty: bool = True,
) -> str | None:
    """A string field, or ``None`` when absent (or null) and not required."""
    value = body.get(name)
    if value is None:
        if required:
            raise bad_request(f"field '{name}' is required")
        return None
    if not isinstance(value, str):
        raise bad_request(f"field '{name}' must be a string, got {_kind(value)}")
    if not value and not allow_empty:
        raise bad_request(f"field '{name}' cannot be empty")
    if len(value) > max_chars:
        raise bad_request(f"field '{name}' is {len(value)} characters long; the limit is {max_chars}")
    if "\x00" in value:
        raise bad_request(f"field '{name}' cannot contain the NUL character")
    return value


def integer(body: Mapping[str, Any], name: str, *, default: int, minimum: int, maximum: int) -> int:
    """A whole-number field within ``[minimum, maximum]``; ``default`` when absent."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"field '{name}' must be a whole number, got {_kind(value)}")
    if not minimum <= value <= maximum:
        raise bad_request(f"field '{name}' must be from {minimum} to {maximum}, got {value}")
    return value


def boolean(body: Mapping[str, Any], name: str) -> bool | None:
    """A ``true``/``false`` field, or ``None`` when absent."""
    value = body.get(name)
    if value is None or isinstance(value, bool):
        return value
    raise bad_request(f"field '{name}' must be true or false, got {_kind(value)}")


def obj(body: Mapping[str, Any], name: str, *, max_bytes: int = METADATA_MAX_BYTES) -> dict[str, Any] | None:
    """A JSON-object field of at most ``max_bytes``, or ``None`` when absent."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request(f"field '{name}' must be a JSON object, got {_kind(value)}")
    size = json_size(value)
    if size > max_bytes:
        raise bad_request(f"field '{name}' is {size} bytes of JSON; the limit is {max_bytes}")
    return value


def choice(body: Mapping[str, Any], name: str, allowed: Sequence[str], *, default: str | None = None) -> str | None:
    """A field whose value is one of ``allowed``; ``default`` when absent."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise bad_request(f"field '{name}' must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}"[:600])
    return value


def select(body: Mapping[str, Any], allowed: Sequence[str]) -> list[str] | None:
    """The ``select`` field: a list of field names among ``allowed``, or ``None``."""
    value = body.get("select")
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise bad_request("field 'select' must be a non-empty list of field names")
    for item in value:
        if not isinstance(item, str) or item not in allowed:
            raise bad_request(f"field 'select' names {str(item)[:100]!r}; allowed: {', '.join(allowed)}")
    return list(dict.fromkeys(value))


def query_bool(request: web.Request, name: str, *, default: bool = False) -> bool:
    """A query parameter read as a boolean (``true``/``false``/``1``/``0``)."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"true", "1", "yes"}:
        return True
    if lowered in {"false", "0", "no"}:
        return False
    raise bad_request(f"query parameter '{name}' must be true or false, got {raw[:100]!r}")


def contains(document: Any, pattern: Any) -> bool:
    """JSON containment, as LangGraph's server filters metadata: every key of ``pattern`` is in ``document`` with
    a value that contains the pattern's (objects recursively, other values by equality)."""
    if isinstance(pattern, dict):
        if not isinstance(document, dict):
            return False
        return all(key in document and contains(document[key], sub) for key, sub in pattern.items())
    if _is_number(document) and _is_number(pattern):
        return bool(document == pattern)
    return type(document) is type(pattern) and bool(document == pattern)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def page(items: list[dict[str, Any]], *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int | None]:
    """``items[offset:offset+limit]`` and the offset of the next page (``None`` on the last one)."""
    chosen = items[offset : offset + limit]
    following = offset + limit if offset + limit < len(items) else None
    return chosen, following


def sort_records(items: list[dict[str, Any]], sort_by: str, order: str, tiebreak: str) -> list[dict[str, Any]]:
    """Records sorted by a field (missing values first when ascending), then by ``tiebreak``."""

    def key(item: dict[str, Any]) -> tuple[bool, str, str]:
        value = item.get(sort_by)
        return (value is not None, "" if value is None else str(value), str(item.get(tiebreak, "")))

    return sorted(items, key=key, reverse=order == "desc")


def json_response(value: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON answer (``null`` for ``None``)."""
    return web.Response(
        status=status,
        body=json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"),
        content_type="application/json",
        headers=headers,
    )
