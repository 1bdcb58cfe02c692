"""The task hubs the dashboard shows, each reached through one endpoint client (the public protocol only).

A hub the backend refuses (unknown hub, missing or wrong credentials) is marked refused with the service's
message, and the server answers every action on it with 403 instead of forwarding it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from dtscale_emulator.dashboard import workers
from dtscale_emulator.dashboard.endpoint import EndpointClient

# Statuses that mean "this caller may not use this hub", as opposed to a passing failure.
REFUSALS = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)

ClientFactory = Callable[[str], EndpointClient]


def describe(error: BaseException) -> str:
    """The service's own words for a refused call (``CODE: details``), or the error's message."""
    if isinstance(error, grpc.RpcError):
        code = error.code() if callable(getattr(error, "code", None)) else None
        details = error.details() if callable(getattr(error, "details", None)) else str(error)
        return f"{code.name if code is not None else 'ERROR'}: {details}"
    return str(error) or type(error).__name__


def is_refusal(error: BaseException) -> bool:
    return isinstance(error, grpc.RpcError) and callable(getattr(error, "code", None)) and error.code() in REFUSALS


def parse_json(text: str | None, field_name: str) -> Any:
    """A JSON payload typed in the page; empty means none. ``ValueError`` names the field and the problem."""
    if text is None or not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        message = f"{field_name} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        raise ValueError(message) from None


class UnknownHubError(LookupError):
    """A task hub the dashboard was not given."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown task hub {name!r}")


@dataclass
class Hub:
    name: str
    client: EndpointClient
    refused: str | None = None  # the service's message when it refused this hub
    checked: bool = False

    async def check(self) -> None:
        """Asks the backend once whether this caller may use the hub."""
        try:
            await self.client.query_instances(size=1)
            self.refused = None
        except Exception as error:
            if not is_refusal(error):
                raise
            self.refused = describe(error)
        self.checked = True


@dataclass
class Hubs:
    """The dashboard's hubs by name, with one endpoint client each."""

    factory: ClientFactory
    names: Sequence[str]
    _hubs: dict[str, Hub] = field(default_factory=dict)
    _lock: asyncio.Lock | None = None

    async def get(self, name: str) -> Hub:
        """The hub, checked with the backend on first use.

        Raises:
            UnknownHubError: the dashboard was not given this hub.
        """
        if name not in self.names:
            raise UnknownHubError(name)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            hub = self._hubs.get(name)
            if hub is None:
                hub = self._hubs[name] = Hub(name, self.factory(name))
            if not hub.checked:
                await hub.check()
        return hub

    async def close(self) -> None:
        for hub in self._hubs.values():
            await hub.client.close()
        self._hubs.clear()

    async def workers_of(self, name: str) -> dict[str, Any] | None:
        """Connected workers and backlog of the hub, or ``None`` when the backend cannot tell."""
        hub = await self.get(name)
        return None if hub.refused else await workers.fetch(hub.client)
