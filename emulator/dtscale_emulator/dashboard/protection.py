"""What the dashboard asks of every request that changes state, and the headers every response carries.

Only the dashboard's own page may change anything: a request other than GET or HEAD must name the dashboard's own
origin in ``Origin`` and carry a JSON body. Browsers send ``Origin`` on every such request, with the origin of the
page that made it, and no page can change it; a page of another origin can send a JSON body only after a CORS
preflight, which this server never grants. A page on another port of the same host is another origin, even though
it is the same *site* and the browser sends the SameSite cookie with its requests. The check is a middleware, so a
route added later is covered without doing anything.

A request's body must arrive whole within a bound (``bounded_body``), so a client that sends half of one holds
neither its connection nor a handler; aiohttp's idle timeout (see ``start``) bounds the time to a whole head.

Every response forbids framing (clickjacking), sniffing and referrers (an address may hold ``?token=``), and
limits the page to its own scripts, styles and API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Middleware

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: Bytes a second a body must keep up past its timeout: each byte received gives it 1/MIN_BODY_RATE of a second
#: more (Apache's ``mod_reqtimeout`` ``MinRate``), so a large body over a slow link is read whole, a trickle cut.
MIN_BODY_RATE = 1024

#: The methods that only read: the dashboard has no route that changes state on them.
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})
CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def own_origin(request: web.Request) -> str:
    """The origin a page of this dashboard has, as the request reached it (scheme, host name and port)."""
    return f"{request.scheme}://{request.host}".lower()


def _refusal(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def refusal_of(request: web.Request) -> web.Response | None:
    """Why a state-changing request does not come from the dashboard's own page, or ``None`` if it does."""
    expected = own_origin(request)
    origin = request.headers.get("Origin")
    if origin is None:
        return _refusal(403, f"a {request.method} request needs an Origin header naming this dashboard ({expected})")
    if origin.lower() != expected:
        return _refusal(
            403, f"a {request.method} request must come from this dashboard's page ({expected}), not {origin!r}"
        )
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return _refusal(403, f"a {request.method} request must come from this dashboard's page, not a {site} one")
    if request.content_type != "application/json":
        return _refusal(
            415,
            f"a {request.method} request takes a JSON body (Content-Type: application/json), "
            f"not {request.content_type!r}",
        )
    return None


@web.middleware
async def same_origin_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuses every request but GET and HEAD unless it comes from the dashboard's page with a JSON body."""
    if request.method not in SAFE_METHODS:
        refused = refusal_of(request)
        if refused is not None:
            return refused
    return await handler(request)


def bounded_body(timeout: float) -> Middleware:
    """A middleware that reads a request's body before its handler, within ``timeout`` seconds and one more per
    :data:`MIN_BODY_RATE` bytes received; a slower body gets 408 and the connection is closed. Handlers then read
    the body already received."""

    @web.middleware
    async def read_in_time(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.body_exists and not await _read_in_time(request, timeout):
            message = (
                f"the request body did not arrive whole within {timeout:g} seconds "
                f"(and one more second per {MIN_BODY_RATE} bytes received)"
            )
            response = _refusal(408, message)
            response.force_close()
            return response
        return await handler(request)

    return read_in_time


async def _read_in_time(request: web.Request, timeout: float) -> bool:
    """Reads the body (kept for the handler); whether it came whole in the time :func:`bounded_body` allows."""
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


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An ``on_response_prepare`` hook: every answer, errors and the live stream included, gets the headers."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
