"""``langgraph.json``'s ``webhooks`` key and ``http.disable_webhooks``, read as LangGraph's server reads them.

Without a ``webhooks.url`` policy a URL may be up to 4096 characters and plain ``http``; with one, its omitted
settings take LangGraph's stricter defaults (``https`` only, 2048 characters). Loopback targets are refused unless
``webhooks.url.disable_loopback`` is ``false``; link-local, reserved and cloud metadata addresses always are.
Header values may name environment variables as ``${{ env.NAME }}``, only names that start with ``env_prefix``
(``LG_WEBHOOK_`` by default), resolved once when the file is read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from durabletask.extensions.langgraph._records_effects import RUN_KEYS

#: The fields a webhook's payload may be narrowed to (``webhooks.allowed_fields``).
PAYLOAD_FIELDS = frozenset(RUN_KEYS) | {
    "status",
    "run_started_at",
    "run_ended_at",
    "webhook_sent_at",
    "values",
    "error",
}
_URL_KEYS = frozenset(
    {"require_https", "allowed_domains", "allowed_ports", "max_url_length", "disable_loopback", "disable_private_ips"}
)
_KEYS = frozenset({"env_prefix", "url", "headers", "allowed_fields"})
_TEMPLATE = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
#: The longest URL any policy may allow (LangGraph's own cap on a run's webhook is 4096 characters by default).
MAX_URL_LENGTH_CAP = 65536


@dataclass(frozen=True)
class WebhookSettings:
    """How run webhooks are checked and sent.

    Args:
        require_https: Refuse ``http://`` URLs.
        allowed_domains: Hosts allowed (``*.example.com`` matches subdomains); empty: any public host.
        allowed_ports: Ports allowed (443/80 when the URL names none); empty: any.
        max_url_length: The longest URL accepted, in characters.
        disable_loopback: Refuse ``localhost`` and loopback addresses (LangGraph's default).
        disable_private_ips: Refuse RFC 1918, CGN and ULA addresses.
        headers: Headers sent with every webhook, environment templates resolved.
        allowed_fields: The payload's fields kept; ``None``: all of them.
        disabled: ``http.disable_webhooks``: runs take a webhook, none is sent.
    """

    require_https: bool = False
    allowed_domains: tuple[str, ...] = ()
    allowed_ports: tuple[int, ...] = ()
    max_url_length: int = 4096
    disable_loopback: bool = True
    disable_private_ips: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    allowed_fields: frozenset[str] | None = None
    disabled: bool = False


def _flag(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false, not {value!r}")
    return value


def _url_policy(policy: Any) -> dict[str, Any]:
    if not isinstance(policy, dict):
        raise ValueError("webhooks.url must be an object")
    for key in policy:
        if key not in _URL_KEYS:
            raise ValueError(f"webhooks.url.{key} is unknown; known: {', '.join(sorted(_URL_KEYS))}")
    found: dict[str, Any] = {"require_https": True, "max_url_length": 2048}  # LangGraph's defaults with a policy
    for key in ("require_https", "disable_loopback", "disable_private_ips"):
        if key in policy:
            found[key] = _flag(f"webhooks.url.{key}", policy[key])
    domains = policy.get("allowed_domains", [])
    if not isinstance(domains, list) or not all(isinstance(d, str) and d.strip() for d in domains):
        raise ValueError("webhooks.url.allowed_domains must be a list of non-empty strings")
    for domain in domains:
        if "*" in domain and (not domain.startswith("*.") or "*" in domain[2:]):
            raise ValueError(
                f"webhooks.url.allowed_domains: a wildcard only starts a domain, as '*.example.com': {domain!r}"
            )
    found["allowed_domains"] = tuple(d.strip().lower() for d in domains)
    ports = policy.get("allowed_ports", [])
    if not isinstance(ports, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports
    ):
        raise ValueError("webhooks.url.allowed_ports must be a list of port numbers (1 to 65535)")
    found["allowed_ports"] = tuple(ports)
    length = policy.get("max_url_length", 2048)
    if isinstance(length, bool) or not isinstance(length, int) or not 0 < length <= MAX_URL_LENGTH_CAP:
        raise ValueError(f"webhooks.url.max_url_length must be a whole number from 1 to {MAX_URL_LENGTH_CAP}")
    found["max_url_length"] = length
    return found


def _headers(headers: Any, prefix: str, environ: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(headers, dict):
        raise ValueError("webhooks.headers must be an object of strings")

    def resolve(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if not expression.startswith("env.") or "." in expression[4:] or not expression[4:]:
            raise ValueError(f"webhooks.headers: only '${{{{ env.NAME }}}}' may be used, not '{expression}'")
        name = expression[4:]
        if prefix and not name.startswith(prefix):
            raise ValueError(f"webhooks.headers: environment variable '{name}' must start with '{prefix}' (env_prefix)")
        if name not in environ:
            raise ValueError(f"webhooks.headers: environment variable '{name}' is not set")
        return environ[name]

    out: dict[str, str] = {}
    for key, value in headers.items():
        if not isinstance(value, str):
            raise ValueError(f"webhooks.headers.{key} must be a string")
        resolved = _TEMPLATE.sub(resolve, value)
        if any(ch in resolved or ch in key for ch in "\r\n\0"):
            raise ValueError(f"webhooks.headers.{key}: a header cannot hold a line break or NUL")
        out[key] = resolved
    return out


def parse_webhooks(
    file: Path, raw: Any, *, disabled: bool = False, environ: Mapping[str, str] | None = None
) -> WebhookSettings:
    """The ``webhooks`` key of ``file`` (``None``: LangGraph's defaults); ``ValueError`` names the key that is wrong."""
    if raw is None:
        return WebhookSettings(disabled=disabled)
    if not isinstance(raw, dict):
        raise ValueError("webhooks must be an object")
    for key in raw:
        if key not in _KEYS:
            raise ValueError(f"webhooks.{key} is unknown; known: {', '.join(sorted(_KEYS))}")
    prefix = raw.get("env_prefix", "LG_WEBHOOK_")
    if not isinstance(prefix, str):
        raise ValueError("webhooks.env_prefix must be a string")
    fields = raw.get("allowed_fields")
    if fields is not None:
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise ValueError("webhooks.allowed_fields must be a list of strings")
        unknown = sorted(set(fields) - PAYLOAD_FIELDS)
        if unknown:
            raise ValueError(
                f"webhooks.allowed_fields: '{unknown[0]}' is not a field; known: {', '.join(sorted(PAYLOAD_FIELDS))}"
            )
    policy = _url_policy(raw["url"]) if raw.get("url") is not None else {}
    headers = _headers(raw.get("headers") or {}, prefix, os.environ if environ is None else environ)
    return WebhookSettings(
        **policy,
        headers=headers,
        allowed_fields=frozenset(fields) if fields else None,
        disabled=disabled,
    )
