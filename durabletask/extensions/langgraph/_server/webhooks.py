"""Run webhooks: the URL checked when a run is made, and the POST sent, durably, once the run has ended.

When a run that names a webhook ends, the thread's record starts the orchestration ``lgs.webhook`` (see
``_records_effects``); it calls the activity ``lgs.webhook_post``, retried as LangGraph's server retries (three
attempts, growing pauses) on a timeout, a network error, a 5xx or a 429. The thread's own orchestration never
waits for it, so a receiver that hangs or fails delays no run; a worker that dies mid-POST leaves the activity to
another worker (at least once). The URL is checked again before each POST, its host resolved again, so a policy
changed since, or a name that now resolves to a refused address, stops the delivery; and the connection itself
resolves the host through :func:`checked_resolver`, so a name that resolves elsewhere between the check and the
connection (DNS rebinding) reaches no refused address either.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import logging
import socket
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

from durabletask import task
from durabletask.extensions.langgraph._records_effects import WEBHOOK_ORCHESTRATION
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings
from durabletask.extensions.langgraph._server.errors import HttpError, bad_request
from durabletask.extensions.langgraph._server.state import to_json
from durabletask.extensions.langgraph._server.threads_records import stored

WEBHOOK_POST = "lgs.webhook_post"
"""The activity that POSTs one run's webhook."""
#: Seconds to connect, and to get the answer, as LangGraph's server waits.
CONNECT_TIMEOUT = 5.0
ANSWER_TIMEOUT = 30.0
#: Seconds a webhook's host name may take to resolve when it is checked.
RESOLVE_TIMEOUT = 5.0
DELIVERY_RETRY = task.RetryPolicy(
    first_retry_interval=datetime.timedelta(seconds=1),
    max_number_of_attempts=3,
    backoff_coefficient=2.0,
    max_retry_interval=datetime.timedelta(seconds=30),
)
_logger = logging.getLogger("durabletask.extensions.langgraph.webhooks")

_ALWAYS_REFUSED = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "169.254.0.0/16",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "fe80::/10",
        "ff00::/8",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "::/128",
    )
)
_LOOPBACK = tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "::1/128"))
_PRIVATE = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)
_METADATA_ADDRESSES = frozenset({"169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"})
_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.amazonaws.com", "metadata", "instance-data"})
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "host.docker.internal"})


class WebhookDeliveryError(Exception):
    """A webhook's POST failed in a way worth another attempt (timeout, network error, 5xx, 429)."""


def _address_refusal(text: str, settings: WebhookSettings) -> str | None:
    address = ipaddress.ip_address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if str(address) in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if any(address in net for net in _ALWAYS_REFUSED if net.version == address.version):
        return "a link-local, reserved, multicast or documentation address"
    if settings.disable_loopback and any(address in net for net in _LOOPBACK if net.version == address.version):
        return "a loopback address (webhooks.url.disable_loopback is true, LangGraph's default)"
    if settings.disable_private_ips and any(address in net for net in _PRIVATE if net.version == address.version):
        return "a private address (webhooks.url.disable_private_ips is true)"
    return None


def _name_refusal(host: str, settings: WebhookSettings) -> str | None:
    if settings.disable_loopback and host in _LOCAL_NAMES:
        return "a loopback name (webhooks.url.disable_loopback is true, LangGraph's default)"
    if host in _METADATA_NAMES:
        return "a cloud metadata name"
    if host.endswith(".svc.cluster.local"):
        return "a Kubernetes-internal name"
    return None


def _allowed_domain(host: str, settings: WebhookSettings) -> bool:
    for domain in settings.allowed_domains:
        if domain.startswith("*.") and host.endswith(domain[1:]):
            return True
        if host == domain:
            return True
    return False


def _split(url: str, settings: WebhookSettings) -> tuple[str, int, str]:
    """The URL's host, port and scheme, once its form and the policy's scheme, port and domain rules are met."""
    if len(url) > settings.max_url_length:
        raise bad_request(f"'webhook' is {len(url)} characters long; the limit is {settings.max_url_length}")
    if url.startswith("/"):
        raise bad_request(
            "'webhook' must be an absolute http(s) URL: relative URLs (the server's own routes) are refused"
        )
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise bad_request("'webhook' holds whitespace or control characters")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise bad_request(f"'webhook' must be an http or https URL, not {scheme or 'one without a scheme'!r}")
    if settings.require_https and scheme != "https":
        raise bad_request("'webhook' must use https (webhooks.url.require_https)")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise bad_request("'webhook' has an invalid port") from None
    host = (parts.hostname or "").lower()
    if not host:
        raise bad_request("'webhook' has no host")
    if settings.allowed_ports and port not in settings.allowed_ports:
        raise bad_request(f"'webhook' port {port} is not allowed (webhooks.url.allowed_ports)")
    if settings.allowed_domains and not _allowed_domain(host, settings):
        raise bad_request(f"'webhook' host {host!r} is not allowed (webhooks.url.allowed_domains)")
    return host, port, scheme


async def _addresses(host: str, port: int) -> list[str]:
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        found = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=RESOLVE_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        raise bad_request(f"'webhook' host {host!r} cannot be resolved") from None
    return sorted({str(info[4][0]).split("%", 1)[0] for info in found})


async def check_webhook(url: Any, settings: WebhookSettings) -> str:
    """``url`` if a run may name it as its webhook; 422 saying which rule it breaks otherwise.

    Every address the host resolves to is checked, as LangGraph's server checks them (a host that
    ``webhooks.url.allowed_domains`` names exactly is trusted as it is).
    """
    if not isinstance(url, str) or not url:
        raise bad_request("'webhook' must be a non-empty URL string")
    host, port, _ = _split(url, settings)
    refusal = _name_refusal(host.rstrip("."), settings)
    if refusal is None and host not in settings.allowed_domains:
        for address in await _addresses(host.strip("[]"), port):
            refusal = _address_refusal(address, settings)
            if refusal is not None:
                break
    if refusal is not None:
        raise bad_request(f"'webhook' host {host!r} is refused: {refusal}")
    return url


#: What LangGraph's server's webhook says of a run cancelled (its ``UserInterrupt``, as its serializer writes it).
INTERRUPTED_ERROR = {"error": "UserInterrupt", "message": "User interrupted the run"}


def _error_json(error: Any) -> Any:
    if not isinstance(error, str):
        return error
    kind, _, message = error.partition(": ")
    return {"error": kind.rsplit(".", 1)[-1], "message": message}


def payload(value: dict[str, Any], settings: WebhookSettings, sent_at: str) -> dict[str, Any]:
    """The JSON a run's webhook gets: the run, its status and times, the thread's values when it ended."""
    run = dict(value.get("run") or {})
    run["kwargs"] = {**(run.get("kwargs") or {}), "webhook": value.get("webhook")}
    run.setdefault("langsmith_session_name", None)  # a field of LangGraph's runs; nothing goes to LangSmith here
    body: dict[str, Any] = {
        **run,
        "status": value.get("status"),
        "run_started_at": value.get("run_started_at"),
        "run_ended_at": value.get("run_ended_at"),
        "webhook_sent_at": sent_at,
        "values": to_json(stored(value.get("values"))),
    }
    if value.get("error"):
        body["error"] = _error_json(value["error"])
    elif body["status"] == "interrupted":
        body["error"] = dict(INTERRUPTED_ERROR)
    if settings.allowed_fields is not None:
        body = {k: v for k, v in body.items() if k in settings.allowed_fields}
    return body


async def post(value: dict[str, Any], settings: WebhookSettings) -> dict[str, Any]:
    """One POST of a run's webhook: ``{"status": code}``, or ``{"refused": why}`` when its URL is refused now.

    Raises:
        WebhookDeliveryError: A timeout, a network error, a 5xx or a 429: worth another attempt.
    """
    import aiohttp

    url = str(value.get("webhook"))
    if settings.disabled:
        return {"skipped": "http.disable_webhooks is true"}
    try:
        await check_webhook(url, settings)
    except HttpError as refused:
        _logger.warning("webhook of run %s not sent: %s", (value.get("run") or {}).get("run_id"), refused.detail)
        return {"refused": refused.detail}
    sent_at = datetime.datetime.now(datetime.timezone.utc).isoformat()
    data = json.dumps(payload(value, settings, sent_at), default=str).encode()
    headers = {**settings.headers, "Content-Type": "application/json"}
    timeout = aiohttp.ClientTimeout(total=CONNECT_TIMEOUT + ANSWER_TIMEOUT, connect=CONNECT_TIMEOUT)
    try:
        connector = aiohttp.TCPConnector(resolver=checked_resolver(settings), force_close=True)
        async with (
            aiohttp.ClientSession(timeout=timeout, connector=connector) as session,
            session.post(url, data=data, headers=headers, allow_redirects=False) as answer,
        ):
            status = answer.status
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
        raise WebhookDeliveryError(f"POST {url} failed: {type(error).__name__}: {error}") from None
    if status >= 500 or status == 429:
        raise WebhookDeliveryError(f"POST {url} was answered {status}")
    return {"status": status}


def checked_resolver(settings: WebhookSettings) -> Any:
    """An aiohttp resolver that keeps only the addresses the policy allows (none: the connection fails)."""
    from aiohttp.resolver import ThreadedResolver

    class CheckedResolver(ThreadedResolver):
        async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> Any:
            found = await super().resolve(host, port, family)
            if host.lower().rstrip(".") in settings.allowed_domains:
                return found
            allowed = [r for r in found if _address_refusal(str(r["host"]).split("%", 1)[0], settings) is None]
            if not allowed:
                raise OSError(f"every address of {host!r} is refused by the webhook policy")
            return allowed

    return CheckedResolver()


def webhook_delivery(ctx: task.OrchestrationContext, value: Any) -> Generator[task.Task[Any], Any, Any]:
    """``lgs.webhook``: the run's webhook POSTed, retried; its outcome is the orchestration's output."""
    try:
        return (yield ctx.call_activity(WEBHOOK_POST, input=value, retry_policy=DELIVERY_RETRY))
    except task.TaskFailedError as failed:
        return {"delivered": False, "error": failed.details.message}


def register_webhooks(worker: Any, settings: WebhookSettings) -> None:
    """The delivery orchestration and its activity, on a worker (before it starts)."""

    async def post_webhook(ctx: task.ActivityContext, value: dict[str, Any]) -> dict[str, Any]:
        return await post(value, settings)

    worker.add_orchestrator(webhook_delivery, name=WEBHOOK_ORCHESTRATION)
    worker.add_activity(post_webhook, name=WEBHOOK_POST)
