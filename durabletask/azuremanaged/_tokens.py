"""Access tokens for the scheduler: audience resolution and sync/async caches that refresh before expiry."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, cast

__all__ = [
    "DEFAULT_REFRESH_MARGIN_SECONDS",
    "DEFAULT_RESOURCE_ID",
    "US_GOVERNMENT_RESOURCE_ID",
    "AccessTokenLike",
    "AsyncTokenCache",
    "AsyncTokenCredentialLike",
    "TokenCache",
    "TokenCredentialLike",
    "resolve_resource_id",
    "token_scope",
]

_log = logging.getLogger("durabletask.azuremanaged")

#: Token audience of the public-cloud scheduler.
DEFAULT_RESOURCE_ID = "https://durabletask.io"
#: Token audience of the US Government clouds, chosen when ``REGION_NAME`` names one of their regions.
US_GOVERNMENT_RESOURCE_ID = "https://durabletask.azure.us"
#: How long before expiry a token is replaced (capped at half the token's lifetime).
DEFAULT_REFRESH_MARGIN_SECONDS = 300.0

_DEFAULT_SUFFIX = "/.default"
_US_GOVERNMENT_REGION_PREFIXES = ("usgov", "usdod")


class AccessTokenLike(Protocol):
    """Shape of ``azure.core.credentials.AccessToken``: the bearer string and its expiry (epoch seconds)."""

    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> int: ...


class TokenCredentialLike(Protocol):
    """Structural type of ``azure.core.credentials.TokenCredential``."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessTokenLike: ...


class AsyncTokenCredentialLike(Protocol):
    """Structural type of ``azure.core.credentials_async.AsyncTokenCredential``."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessTokenLike: ...


def resolve_resource_id(resource_id: str | None = None) -> str:
    """The token audience for the scheduler, normalised.

    ``None`` or ``""`` picks the cloud's default from the ``REGION_NAME`` environment variable (US
    Government regions use their own audience). An explicit value loses surrounding whitespace, trailing
    slashes and a ``/.default`` suffix, since the scope suffix is added later.

    Raises:
        ValueError: the explicit value is empty once normalised.
    """
    if not resource_id:
        region = os.environ.get("REGION_NAME", "").strip().lower()
        if region.startswith(_US_GOVERNMENT_REGION_PREFIXES):
            return US_GOVERNMENT_RESOURCE_ID
        return DEFAULT_RESOURCE_ID
    normalised = resource_id.strip().rstrip("/")
    if normalised.lower().endswith(_DEFAULT_SUFFIX):
        normalised = normalised[: -len(_DEFAULT_SUFFIX)].rstrip("/")
    if not normalised:
        raise ValueError(f"resource_id {resource_id!r} is empty once whitespace, '/' and '/.default' are removed")
    return normalised


def token_scope(resource_id: str | None = None) -> str:
    """The OAuth scope requested from the credential, e.g. ``https://durabletask.io/.default``."""
    return resolve_resource_id(resource_id) + _DEFAULT_SUFFIX


class _TokenState:
    """The current token and when to replace it; shared by both caches so they agree on the timing."""

    def __init__(self, margin: float) -> None:
        if margin < 0:
            raise ValueError(f"refresh margin must be >= 0 seconds, got {margin}")
        self._margin = margin
        self.current: AccessTokenLike | None = None
        self._refresh_at = 0.0

    def fresh(self, now: float) -> AccessTokenLike | None:
        """The token if it need not be replaced yet."""
        return self.current if self.current is not None and now < self._refresh_at else None

    def unexpired(self, now: float) -> AccessTokenLike | None:
        """The token if the service would still accept it (used when a refresh fails)."""
        return self.current if self.current is not None and now < self.current.expires_on else None

    def store(self, access_token: AccessTokenLike, now: float) -> AccessTokenLike:
        expires_on = float(access_token.expires_on)
        # A token that lives shorter than twice the margin would otherwise be refreshed on every call.
        margin = min(self._margin, max(expires_on - now, 0.0) / 2)
        self.current = access_token
        self._refresh_at = expires_on - margin
        return access_token


class _CacheBase:
    """What both caches expose about the token they hold."""

    _state: _TokenState
    _clock: Callable[[], float]
    _scope: str

    @property
    def scope(self) -> str:
        """The scope requested from the credential."""
        return self._scope

    @property
    def expires_on(self) -> float | None:
        """Expiry of the token held (epoch seconds), ``None`` before the first request."""
        current = self._state.current
        return None if current is None else float(current.expires_on)

    def needs_refresh(self) -> bool:
        """Whether the next request for a token will ask the credential for a new one."""
        return self._state.fresh(self._clock()) is None


class TokenCache(_CacheBase):
    """Hands out a bearer token from a blocking credential, asking for a new one shortly before expiry.

    The first token is requested on first use, not at construction. Concurrent callers that find the
    token stale wait for the one refresh in progress and reuse its result.

    Args:
        credential: Any ``azure.core.credentials.TokenCredential``.
        scope: The scope to request (see :func:`token_scope`).
        refresh_margin: Seconds before expiry at which the token is replaced.
        clock: Current time in epoch seconds; injectable for tests.
    """

    def __init__(
        self,
        credential: TokenCredentialLike,
        scope: str,
        *,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if inspect.iscoroutinefunction(getattr(credential, "get_token", None)):
            raise TypeError(
                f"{type(credential).__name__} is an async credential; the blocking client and worker need a "
                "synchronous TokenCredential (e.g. from azure.identity rather than azure.identity.aio)"
            )
        self._credential = credential
        self._scope = scope
        self._clock = clock
        self._state = _TokenState(refresh_margin)
        self._lock = threading.Lock()

    def get_token(self) -> str:
        """A bearer token valid for at least the refresh margin (or half its lifetime)."""
        return self.get_access_token().token

    def get_access_token(self) -> AccessTokenLike:
        """Like :meth:`get_token`, returning the credential's ``AccessToken``."""
        current = self._state.fresh(self._clock())
        if current is not None:
            return current
        with self._lock:
            # Another thread may have refreshed while this one waited for the lock.
            current = self._state.fresh(self._clock())
            return current if current is not None else self._refresh_locked()

    def refresh(self) -> AccessTokenLike:
        """Ask the credential for a new token now, whatever the current one's expiry."""
        with self._lock:
            return self._refresh_locked()

    def _refresh_locked(self) -> AccessTokenLike:
        try:
            access_token = self._credential.get_token(self._scope)
        except Exception as error:
            return _fallback_or_raise(self._state, self._clock(), error)
        return self._state.store(access_token, self._clock())


class AsyncTokenCache(_CacheBase):
    """The asyncio counterpart of :class:`TokenCache`.

    Accepts an ``AsyncTokenCredential`` or a blocking ``TokenCredential``; the latter runs in a worker
    thread so the event loop never blocks on a token request. One refresh runs at a time per event loop;
    other coroutines wait for it and reuse its token.
    """

    def __init__(
        self,
        credential: AsyncTokenCredentialLike | TokenCredentialLike,
        scope: str,
        *,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._request = _async_requester(credential, scope)
        self._scope = scope
        self._clock = clock
        self._state = _TokenState(refresh_margin)
        # asyncio locks belong to one loop; a cache may outlive a loop (e.g. one asyncio.run per test),
        # so the lock is recreated whenever the running loop changes.
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._lock_guard = threading.Lock()

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._lock_guard:
            if self._lock is None or self._lock_loop is not loop:
                self._lock = asyncio.Lock()
                self._lock_loop = loop
            return self._lock

    async def get_token(self) -> str:
        """A bearer token valid for at least the refresh margin (or half its lifetime)."""
        return (await self.get_access_token()).token

    async def get_access_token(self) -> AccessTokenLike:
        """Like :meth:`get_token`, returning the credential's ``AccessToken``."""
        current = self._state.fresh(self._clock())
        if current is not None:
            return current
        async with self._loop_lock():
            current = self._state.fresh(self._clock())
            return current if current is not None else await self._refresh_locked()

    async def refresh(self) -> AccessTokenLike:
        """Ask the credential for a new token now, whatever the current one's expiry."""
        async with self._loop_lock():
            return await self._refresh_locked()

    async def _refresh_locked(self) -> AccessTokenLike:
        try:
            access_token = await self._request()
        except Exception as error:
            return _fallback_or_raise(self._state, self._clock(), error)
        return self._state.store(access_token, self._clock())


def _async_requester(
    credential: AsyncTokenCredentialLike | TokenCredentialLike, scope: str
) -> Callable[[], Awaitable[AccessTokenLike]]:
    get_token = getattr(credential, "get_token", None)
    if get_token is None:
        raise TypeError(f"{type(credential).__name__} has no get_token method; pass an azure-identity credential")
    if inspect.iscoroutinefunction(get_token):
        async_get = cast(Callable[[str], Awaitable[AccessTokenLike]], get_token)
        return lambda: async_get(scope)
    sync_get = cast(Callable[[str], AccessTokenLike], get_token)
    return lambda: asyncio.to_thread(sync_get, scope)


def _fallback_or_raise(state: _TokenState, now: float, error: Exception) -> AccessTokenLike:
    """Keep using a token that is due for refresh but not yet expired when the credential fails."""
    token = state.unexpired(now)
    if token is None:
        raise error
    _log.warning("refreshing the scheduler access token failed; using the current one until it expires", exc_info=True)
    return token
