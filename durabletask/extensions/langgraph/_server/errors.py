"""The HTTP errors of the server: each becomes a JSON answer ``{"detail": ...}`` with its status, never a 500."""

from __future__ import annotations

import json
import sys
from typing import Any


class HttpError(Exception):
    """An answer other than 2xx, with the status and a message naming the field and the limit where there is one.

    Args:
        status: The HTTP status code (4xx for bad requests, 404 for what does not exist, 409 for conflicts).
        detail: What went wrong, said for the caller.
    """

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def bad_request(detail: str) -> HttpError:
    """A 422 answer for a body or parameter that is malformed or out of its limits (as LangGraph's server answers).

    Args:
        detail: What is wrong, naming the field.
    """
    return HttpError(422, detail)


def not_found(what: str) -> HttpError:
    """A 404 answer.

    Args:
        what: What was not found, e.g. ``"thread 'abc'"``.
    """
    return HttpError(404, f"{what} not found")


def conflict(detail: str) -> HttpError:
    """A 409 answer.

    Args:
        detail: The conflict, e.g. a busy thread refused under ``multitask_strategy="reject"``.
    """
    return HttpError(409, detail)


def json_value(raw: bytes, **hooks: Any) -> Any:
    """``raw`` read as UTF-8 JSON text; 422 naming what is wrong (not UTF-8, not JSON, too deep, a number too long).

    Args:
        raw: The bytes of a body (or of a frame).
        hooks: ``json.loads``'s hooks (``parse_float``, ``parse_constant``...); one that refuses a value raises an
            ``HttpError``, which passes through.
    """
    try:
        return json.loads(raw.decode("utf-8"), **hooks)
    except UnicodeDecodeError:
        raise bad_request("the request body is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise bad_request(
            f"the request body is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None
    except RecursionError:
        raise bad_request("the request body nests JSON too deeply") from None
    except ValueError:
        # What else json.loads raises: an integer of more digits than Python converts (sys.int_max_str_digits).
        limit = sys.get_int_max_str_digits()
        raise bad_request(f"the request body holds a number too long to read; the limit is {limit} digits") from None


async def json_body(request: Any, *, required: bool = True) -> dict[str, Any]:
    """A request's body as a JSON object; 422 naming what is wrong (not JSON, not UTF-8, not an object).

    Args:
        request: The aiohttp request.
        required: Whether an empty body is refused (else it reads as ``{}``).
    """
    raw = await request.read()
    if not raw.strip():
        if required:
            raise bad_request("the request body is empty; a JSON object is expected")
        return {}
    value = json_value(raw)
    if not isinstance(value, dict):
        raise bad_request(f"the request body must be a JSON object, got {type(value).__name__}")
    return value
