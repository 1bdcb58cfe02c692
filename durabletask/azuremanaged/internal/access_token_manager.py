"""Token managers under the compatible API's names, built on the scheduler token caches."""

from __future__ import annotations

from datetime import datetime, timezone

from durabletask.azuremanaged._tokens import (
    AccessTokenLike,
    AsyncTokenCache,
    AsyncTokenCredentialLike,
    TokenCache,
    TokenCredentialLike,
    resolve_resource_id,
    token_scope,
)

__all__ = ["AccessTokenManager", "AsyncAccessTokenManager", "resolve_resource_id"]

# The compatible API refreshes ten minutes before expiry; its token managers keep that default.
_LEGACY_REFRESH_SECONDS = 600


def _expiry(expires_on: float | None) -> datetime | None:
    return None if expires_on is None else datetime.fromtimestamp(expires_on, tz=timezone.utc)


class AccessTokenManager:
    """Caches a token from a blocking credential; ``None`` credential means no token.

    Args:
        token_credential: An azure-identity ``TokenCredential`` or ``None``.
        refresh_interval_seconds: How long before expiry the token is replaced.
        resource_id: Token audience override (see :func:`resolve_resource_id`).
    """

    def __init__(
        self,
        token_credential: TokenCredentialLike | None,
        refresh_interval_seconds: int = _LEGACY_REFRESH_SECONDS,
        *,
        resource_id: str | None = None,
    ) -> None:
        scope = token_scope(resource_id)
        self._cache = (
            TokenCache(token_credential, scope, refresh_margin=refresh_interval_seconds)
            if token_credential is not None
            else None
        )

    @property
    def expiry_time(self) -> datetime | None:
        """When the held token expires (UTC), ``None`` before the first request."""
        return None if self._cache is None else _expiry(self._cache.expires_on)

    def get_access_token(self) -> AccessTokenLike | None:
        """The current token, refreshed first when due; ``None`` without a credential."""
        return None if self._cache is None else self._cache.get_access_token()

    def is_token_expired(self) -> bool:
        """Whether the token is missing or inside the refresh interval."""
        return self._cache is None or self._cache.needs_refresh()

    def refresh_token(self) -> None:
        """Request a new token now."""
        if self._cache is not None:
            self._cache.refresh()


class AsyncAccessTokenManager:
    """The asyncio counterpart of :class:`AccessTokenManager`."""

    def __init__(
        self,
        token_credential: AsyncTokenCredentialLike | TokenCredentialLike | None,
        refresh_interval_seconds: int = _LEGACY_REFRESH_SECONDS,
        *,
        resource_id: str | None = None,
    ) -> None:
        scope = token_scope(resource_id)
        self._cache = (
            AsyncTokenCache(token_credential, scope, refresh_margin=refresh_interval_seconds)
            if token_credential is not None
            else None
        )

    @property
    def expiry_time(self) -> datetime | None:
        """When the held token expires (UTC), ``None`` before the first request."""
        return None if self._cache is None else _expiry(self._cache.expires_on)

    async def get_access_token(self) -> AccessTokenLike | None:
        """The current token, refreshed first when due; ``None`` without a credential."""
        return None if self._cache is None else await self._cache.get_access_token()

    def is_token_expired(self) -> bool:
        """Whether the token is missing or inside the refresh interval."""
        return self._cache is None or self._cache.needs_refresh()

    async def refresh_token(self) -> None:
        """Request a new token now."""
        if self._cache is not None:
            await self._cache.refresh()
