"""What a browser sends on behalf of another site, refused when the server has no token to ask for.

CORS only hides answers from a page: a "simple" cross-origin POST (``Content-Type: text/plain``) is sent without a
preflight and runs, and browsers apply no CORS to WebSocket handshakes. Without a token, any page the developer
opens could drive a ``dev`` on their machine. Browsers always send ``Origin`` on those requests (SDK clients send
none), so a state-changing request or a WebSocket handshake whose ``Origin`` is neither allowed by ``http.cors``
nor the server's own is refused. A page that makes its own name resolve to 127.0.0.1 (DNS rebinding) is
same-origin to itself; a server listening on loopback only therefore answers only loopback names in ``Host``.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Awaitable, Callable

from aiohttp import web

from durabletask.extensions.langgraph._server.config import CorsSettings, ServerSettings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Methods a browser sends cross-site without a preflight only when they read (a link, an image, an EventSource):
# their answers are hidden from the page unless http.cors allows it.
_READING = frozenset({"GET", "HEAD"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) names this machine's loopback."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: never resolved by DNS
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split_host(header: str) -> tuple[str, int | None]:
    """A ``Host`` header's name (lowercase, brackets kept off) and port, if it gives one."""
    text = header.strip().lower()
    if text.startswith("["):
        name, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    return name.rstrip("."), int(port) if port.isdigit() else None


def _same_origin(origin: str, host_header: str | None) -> bool:
    """Whether ``origin`` is the server's own address as the request names it (``Host``); schemes aside, as a
    proxy in front may end TLS."""
    if not host_header:
        return False
    parsed = urllib.parse.urlsplit(origin)
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.hostname:
        return False
    try:
        origin_port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
    except ValueError:  # a port that is not a number
        return False
    name, port = _split_host(host_header)
    ports = {port} if port is not None else {80, 443}
    return parsed.hostname.rstrip(".") == name and origin_port in ports


def _acts(request: web.Request) -> bool:
    """Whether the request can change something: any method but GET and HEAD, or a WebSocket handshake."""
    upgrade = request.headers.get("Upgrade", "")
    return request.method not in _READING or "websocket" in upgrade.lower()


def _refused(detail: str) -> web.Response:
    return web.json_response({"detail": detail}, status=403)


def browser_guard(settings: ServerSettings) -> web.middleware:  # type: ignore[valid-type]
    """Refuses (403) cross-site requests that act, and, on a loopback-only server, ``Host`` names that are not
    loopback ones. For servers without a token: with one, the token is the guard (a page cannot send it without a
    preflight, which ``http.cors`` decides)."""
    cors: CorsSettings | None = settings.cors
    loopback_only = settings.host is not None and is_loopback(settings.host)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if loopback_only and host and not is_loopback(_split_host(host)[0]):
            return _refused(
                f"host {host[:100]!r} is not this server's: it listens on loopback ({settings.host}) and answers "
                "only loopback names (localhost, 127.0.0.1, [::1]); another name may be a page's DNS rebinding"
            )
        origin = request.headers.get("Origin")
        if origin is not None and _acts(request) and not _origin_allowed(cors, origin, host):
            return _refused(
                f"origin {origin[:100]!r} is not allowed (http.cors.allow_origins): without --auth-token, requests "
                "a browser sends for another site are refused"
            )
        return await handler(request)

    return guard


def _origin_allowed(cors: CorsSettings | None, origin: str, host: str | None) -> bool:
    return (cors is not None and cors.allows(origin)) or _same_origin(origin, host)
