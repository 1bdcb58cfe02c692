"""Bearer tokens from Azure credentials for managed DTS: the token audience, and a cache refreshed before expiry.

A credential is anything with azure-identity's ``get_token(*scopes)`` returning an object with ``token`` and
``expires_on`` (epoch seconds). azure-identity's credentials block, so each request for a token runs in a worker
thread and the dashboard's event loop never waits on the identity service.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("dtscale_emulator.dashboard")

#: The public cloud's token audience for the scheduler.
PUBLIC_AUDIENCE = "https://durabletask.io"
#: The US Government clouds' audience, chosen when ``REGION_NAME`` names one of their regions.
US_GOVERNMENT_AUDIENCE = "https://durabletask.azure.us"
#: A token is replaced this many seconds before it expires (at most half its lifetime).
REFRESH_MARGIN = 300.0


class AccessTokenLike(Protocol):
    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> int: ...


def audience(resource_id: str | None) -> str:
    """The token audience: ``resource_id`` without a trailing ``/`` or ``/.default``, else the cloud's default.

    Raises:
        ValueError: ``resource_id`` is empty once trimmed.
    """
    if not resource_id:
        region = os.environ.get("REGION_NAME", "").strip().lower()
        return US_GOVERNMENT_AUDIENCE if region.startswith(("usgov", "usdod")) else PUBLIC_AUDIENCE
    trimmed = resource_id.strip().rstrip("/")
    if trimmed.lower().endswith("/.default"):
        trimmed = trimmed[: -len("/.default")].rstrip("/")
    if not trimmed:
        raise ValueError(f"{resource_id!r} is empty once '/' and '/.default' are removed")
    return trimmed


class CredentialBearer:
    """Bearer tokens from an Azure credential, asked for again shortly before the one held expires.

    Coroutines that find the token due wait for the one refresh in progress. When a refresh fails while the
    token held has not expired yet, that token is used until it does (the failure is logged).

    Args:
        credential: An azure-identity credential (blocking or ``azure.identity.aio``).
        scope: The OAuth scope asked for, e.g. ``https://durabletask.io/.default``.
        clock: Epoch seconds now; injectable for tests.
    """

    def __init__(
        self,
        credential: Any,
        scope: str,
        *,
        margin: float = REFRESH_MARGIN,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not callable(getattr(credential, "get_token", None)):
            raise TypeError(f"{type(credential).__name__} has no get_token(); pass an azure-identity credential")
        self._credential = credential
        self.scope = scope
        self._margin = margin
        self._clock = clock
        self._held: AccessTokenLike | None = None
        self._renew_at = 0.0
        self._lock: asyncio.Lock | None = None

    async def token(self) -> str:
        held = self._held
        if held is not None and self._clock() < self._renew_at:
            return held.token
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._held is not None and self._clock() < self._renew_at:
                return self._held.token  # renewed by the coroutine this one waited for
            return (await self._renew()).token

    async def _renew(self) -> AccessTokenLike:
        try:
            fresh = await self._ask()
        except Exception:
            held = self._held
            if held is None or self._clock() >= float(held.expires_on):
                raise
            log.warning("renewing the scheduler's access token failed; the current one is used until it expires",
                        exc_info=True)  # fmt: skip
            return held
        now, expires = self._clock(), float(fresh.expires_on)
        self._held = fresh
        # A token living less than twice the margin would otherwise be renewed on every call.
        self._renew_at = expires - min(self._margin, max(expires - now, 0.0) / 2)
        return fresh

    async def _ask(self) -> AccessTokenLike:
        get_token = self._credential.get_token
        if inspect.iscoroutinefunction(get_token):
            found: AccessTokenLike = await get_token(self.scope)
        else:
            found = await asyncio.to_thread(get_token, self.scope)
        return found
