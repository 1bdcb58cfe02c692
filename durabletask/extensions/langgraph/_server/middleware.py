"""The server's middleware: errors as JSON, CORS from ``http.cors``, the bearer token, and the body's limits.

Order, outermost first: errors (every answer that is not 2xx is ``{"detail": ...}``), CORS (a preflight is
answered before the token is asked for, as browsers send none with it), auth (or, on a server without a token,
the guard against what browsers send for other sites: ``middleware_browser.py``), then the body's size and time
limits.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.config import CorsSettings, ServerSettings
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.extensions.langgraph._server.middleware_browser import browser_guard

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_LOG = logging.getLogger("durabletask.langgraph.server")
# What the SDKs read from a response's headers, so a browser must be allowed to see them when http.cors does not
# list its own: the run's location after a run is created, and the pagination totals.
DEFAULT_EXPOSED = ("content-location", "location", "x-pagination-total", "x-pagination-next")
_PREFLIGHT_HEADER = "Access-Control-Request-Method"
#: Bytes a second a body must keep up past ``body_timeout``: each byte received gives the body 1/MIN_BODY_RATE of a
#: second more (Apache's ``mod_reqtimeout`` ``MinRate``). A large body over a slow link is read whole; a trickle
#: holds its connection at most ``body_timeout`` plus the body limit over this rate.
MIN_BODY_RATE = 1024
#: Set on a request once its answer's headers are sent (``on_response_prepare``): an error after that cannot
#: be answered with another response.
STARTED_KEY: Any = (
    web.RequestKey("langgraph_server_answer_started", bool)  # newer aiohttp: typed request storage
    if hasattr(web, "RequestKey")
    else "langgraph_server_answer_started"
)


def _json_error(status: int, detail: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"detail": detail}, status=status, headers=headers)


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def error_middleware(settings: ServerSettings) -> web.middleware:  # type: ignore[valid-type]
    """Turns every failure into ``{"detail": ...}``: ``HttpError``, aiohttp's own answers, malformed JSON."""

    @web.middleware
    async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except Exception as error:
            passing = isinstance(error, ConnectionResetError) or (
                isinstance(error, web.HTTPException) and error.status < 400
            )
            if passing:  # the client went away, or a redirect: aiohttp's to handle
                raise
            if request.get(STARTED_KEY):
                # The answer (an event stream) has begun: another one would corrupt it. aiohttp closes the
                # connection, and a client that resumes streams reconnects.
                _LOG.exception("%s %s failed after its answer began", request.method, request.path)
                raise
            return _answer(request, error, settings)

    return errors


def _answer(request: web.Request, error: Exception, settings: ServerSettings) -> web.Response:
    """The JSON answer for ``error``: its own status, 422 for a body that cannot be read, else a bare 500."""
    if isinstance(error, HttpError):
        return _json_error(error.status, error.detail)
    if isinstance(error, web.HTTPRequestEntityTooLarge):
        return _too_large(settings.max_body_bytes)
    if isinstance(error, web.HTTPException):
        headers = {k: v for k, v in error.headers.items() if k.lower() in ("allow", "www-authenticate")}
        return _json_error(error.status, _plain(error), headers)
    if isinstance(error, json.JSONDecodeError):
        return _json_error(422, f"the request body is not valid JSON: {error.msg} at line {error.lineno}")
    if isinstance(error, UnicodeDecodeError):
        return _json_error(422, "the request body is not UTF-8 text")
    if isinstance(error, RecursionError):
        return _json_error(422, "the request nests too deeply to be read")
    _LOG.exception("%s %s failed", request.method, request.path, exc_info=error)
    return _json_error(500, f"internal error: {type(error).__name__}")


def _plain(error: web.HTTPException) -> str:
    text = error.text or error.reason
    # aiohttp's own pages say "404: Not Found"; the status is already the answer's.
    return text.split(": ", 1)[1] if text.startswith(f"{error.status}: ") else text


def _too_large(limit: int) -> web.Response:
    return _json_error(413, f"the request body is larger than the server's limit of {_size(limit)} ({limit} bytes)")


def body_limit_middleware(settings: ServerSettings) -> web.middleware:  # type: ignore[valid-type]
    """Bounds a request body in size and in time before any handler sees it.

    A body whose declared length is over the limit is refused unread (413 naming the limit); one sent without a
    length is cut at the same limit as it is read (aiohttp's ``client_max_size``). The whole body must arrive
    within ``settings.body_timeout`` seconds and one more per :data:`MIN_BODY_RATE` bytes received, else 408 and
    the connection is closed: a client that sends part of a body and stops holds neither the connection nor a
    handler, and one that sends a large body steadily over a slow link is not cut. Handlers then read the body
    already received.
    """

    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        length = request.content_length
        if length is not None and length > settings.max_body_bytes:
            return _too_large(settings.max_body_bytes)
        if request.body_exists and not await _read_in_time(request, settings.body_timeout):
            return _body_too_slow(settings.body_timeout)
        return await handler(request)

    return limit


async def _read_in_time(request: web.Request, timeout: float) -> bool:
    """Reads the body (kept for the handler); whether it came whole within ``timeout`` seconds and one more per
    :data:`MIN_BODY_RATE` bytes received. A failed read (a body over the limit) raises as it does for a handler."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    reading = asyncio.ensure_future(request.read())
    try:
        while True:
            left = started + timeout + request.content.total_bytes / MIN_BODY_RATE - loop.time()
            if left <= 0:
                return False
            done, _ = await asyncio.wait({reading}, timeout=left)
            if done:
                reading.result()
                return True
    finally:
        reading.cancel()  # a body too slow, or this request's own end: the read is not left behind


def _body_too_slow(timeout: float) -> web.Response:
    detail = (
        f"the request body did not arrive whole within the server's body timeout of {timeout:g} seconds "
        f"(and one more second per {MIN_BODY_RATE} bytes received)"
    )
    response = _json_error(408, detail)
    response.force_close()
    return response


def auth_middleware(token: str) -> web.middleware:  # type: ignore[valid-type]
    """Every request must carry ``Authorization: Bearer <token>`` (or ``X-Api-Key: <token>``, what
    ``langgraph_sdk.get_client(api_key=...)`` sends); compared in constant time."""
    expected = token.encode()

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = _credential(request)
        # surrogateescape: a header's bytes that are not UTF-8 compare as the bytes they are (never equal)
        if given is None or not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
            detail = "missing bearer token" if given is None else "invalid bearer token"
            return _json_error(401, detail, {"WWW-Authenticate": 'Bearer realm="langgraph"'})
        return await handler(request)

    return auth


def _credential(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""
    return request.headers.get("X-Api-Key")


def cors_middleware(cors: CorsSettings | None) -> web.middleware:  # type: ignore[valid-type]
    """Answers CORS preflights: allowed origins get the allowed methods and headers, others 403.

    The headers of actual answers (streamed ones included) are added by :func:`add_cors_headers`.
    """

    @web.middleware
    async def preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if request.method != "OPTIONS" or origin is None or _PREFLIGHT_HEADER not in request.headers:
            return await handler(request)
        if cors is None or not cors.allows(origin):
            return _json_error(403, f"origin {origin!r} is not allowed (http.cors.allow_origins)")
        method = request.headers[_PREFLIGHT_HEADER].upper()
        if "*" not in cors.allow_methods and method not in {m.upper() for m in cors.allow_methods}:
            return _json_error(403, f"method {method} is not allowed (http.cors.allow_methods)")
        wanted = request.headers.get("Access-Control-Request-Headers", "")
        if "*" not in cors.allow_headers:
            allowed = {h.lower() for h in cors.allow_headers}
            refused = [h.strip() for h in wanted.split(",") if h.strip() and h.strip().lower() not in allowed]
            if refused:
                return _json_error(403, f"header {refused[0]} is not allowed (http.cors.allow_headers)")
        headers = _origin_headers(cors, origin)
        headers["Access-Control-Allow-Methods"] = method if "*" in cors.allow_methods else ", ".join(cors.allow_methods)
        if wanted:
            headers["Access-Control-Allow-Headers"] = wanted
        headers["Access-Control-Max-Age"] = str(cors.max_age)
        return web.Response(status=200, headers=headers)

    return preflight


def _origin_headers(cors: CorsSettings, origin: str) -> dict[str, str]:
    wildcard = "*" in cors.allow_origins and not cors.allow_credentials
    headers = {"Access-Control-Allow-Origin": "*" if wildcard else origin}
    if not wildcard:
        headers["Vary"] = "Origin"
    if cors.allow_credentials:
        headers["Access-Control-Allow-Credentials"] = "true"
    return headers


def add_cors_headers(cors: CorsSettings | None) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """An ``on_response_prepare`` hook: the CORS headers of an allowed origin, on every answer before it is sent
    (and the mark that the answer has begun, ``STARTED_KEY``)."""

    async def prepare(request: web.Request, response: web.StreamResponse) -> None:
        request[STARTED_KEY] = True
        origin = request.headers.get("Origin")
        if cors is None or origin is None or not cors.allows(origin):
            return
        if "Access-Control-Allow-Origin" in response.headers:
            return
        for key, value in _origin_headers(cors, origin).items():
            response.headers[key] = value
        exposed = cors.expose_headers or DEFAULT_EXPOSED
        response.headers["Access-Control-Expose-Headers"] = ", ".join(exposed)

    return prepare


def middlewares(settings: ServerSettings) -> list[web.middleware]:  # type: ignore[valid-type]
    """The middleware of the application, outermost first."""
    chain = [error_middleware(settings), cors_middleware(settings.cors)]
    if settings.auth_token is not None:
        chain.append(auth_middleware(settings.auth_token))
    else:
        chain.append(browser_guard(settings))
    chain.append(body_limit_middleware(settings))
    return chain
