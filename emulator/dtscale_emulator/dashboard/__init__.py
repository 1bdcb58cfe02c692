"""A web dashboard for the emulator and any DTS endpoint: orchestrations, instances, entities, workers, actions.

It talks to the backend only through its own endpoint client (``endpoint.py``: the public protocol with the
emulator's stubs, plus the optional worker view), so it works wherever the public protocol does and imports no
SDK. The web server (aiohttp, the ``dashboard`` extra) is imported only when a dashboard starts, so the emulator
installs without it.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dtscale_emulator.dashboard.hubs import ClientFactory, Hubs

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["Dashboard", "missing_server_message", "server_tls", "start"]
log = logging.getLogger("dtscale_emulator.dashboard")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost: assume other machines can reach it


def missing_server_message() -> str | None:
    """Why the dashboard cannot start here (its web server is not installed), or ``None`` if it can."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return "the dashboard needs aiohttp: pip install 'dtscale-emulator[dashboard]'"
    return None


@dataclass
class Dashboard:
    """A running dashboard: its address and how to stop it (on the loop that started it)."""

    host: str
    port: int
    runner: web.AppRunner
    tls: bool = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    async def close(self) -> None:
        await self.runner.cleanup()


def server_tls(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The TLS settings of a dashboard served with the PEM certificate (chain) ``cert`` and its key ``key``.

    Raises:
        ValueError: only one of the two is given.
        OSError: a file cannot be read or does not hold what it should (``ssl.SSLError`` is an ``OSError``).
    """
    if (cert is None) != (key is None):
        raise ValueError("the dashboard's TLS needs both a certificate and its key")
    if cert is None or key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def _warn_if_exposed(host: str, token: str | None, tls: bool) -> None:
    if _is_loopback(host):
        return
    if not token:
        log.warning(
            "the dashboard on %s is reachable from other machines and needs no token: anyone who can reach it can "
            "terminate and purge instances; give --auth-token, or bind 127.0.0.1",
            host,
        )
    elif not tls:
        log.warning(
            "the dashboard on %s takes its access token over plain HTTP, which anyone on the network path can "
            "read; serve it with a TLS certificate (--tls-cert and --tls-key), or bind 127.0.0.1",
            host,
        )


async def start(
    clients: ClientFactory,
    hubs: Sequence[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8082,
    token: str | None = None,
    live_interval: float = 1.0,
    tls: ssl.SSLContext | None = None,
    idle_timeout: float = 60.0,
    body_timeout: float = 30.0,
) -> Dashboard:
    """Serves the dashboard for ``hubs`` on the running loop; ``port=0`` picks a free port.

    ``clients`` makes the endpoint client of a hub from its name (see :mod:`dtscale_emulator.dashboard.connect`).
    ``tls`` (see :func:`server_tls`) serves it over HTTPS; its token cookie is then ``Secure``.
    ``idle_timeout``: seconds a connection may go without a whole request head, from when it opens or its last
    answer was sent, before it is closed. ``body_timeout``: seconds a request's body may take to arrive (else 408).

    Raises:
        ImportError: aiohttp is not installed.
        OSError: the port cannot be bound.
    """
    from aiohttp import web

    from dtscale_emulator.dashboard.app import build_app

    app = build_app(
        Hubs(clients, tuple(hubs)),
        token=token,
        live_interval=live_interval,
        loopback_only=_is_loopback(host),
        body_timeout=body_timeout,
    )
    # Open live-update streams never end by themselves: on shutdown they are cut after a short grace.
    # After an early answer (408) the rest of a body is read and dropped so the client can see the answer; a body
    # too slow for ``body_timeout`` is not waited on longer than that again (aiohttp's own bound is 10 s).
    runner = web.AppRunner(
        app,
        access_log=None,
        shutdown_timeout=1.0,
        keepalive_timeout=idle_timeout,
        lingering_time=min(body_timeout, 10.0),
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=tls).start()
    except BaseException:
        await runner.cleanup()
        raise
    _warn_if_exposed(host, token, tls is not None)
    # With port 0 the system chose the port: read it back from the first listening socket.
    bound = runner.addresses[0][1] if runner.addresses else port
    return Dashboard(host, bound, runner, tls=tls is not None)
