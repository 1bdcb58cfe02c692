"""Scheduler interceptors under the compatible API's names, for callers wiring their own channels."""

from __future__ import annotations

from durabletask.azuremanaged._metadata import AsyncSchedulerInterceptor, SchedulerInterceptor
from durabletask.azuremanaged._tokens import (
    AsyncTokenCache,
    AsyncTokenCredentialLike,
    TokenCache,
    TokenCredentialLike,
    token_scope,
)

__all__ = ["DTSAsyncDefaultClientInterceptorImpl", "DTSDefaultClientInterceptorImpl"]


class DTSDefaultClientInterceptorImpl(SchedulerInterceptor):
    """Adds ``taskhub``, ``x-user-agent``, optional ``workerid`` and the bearer token to sync calls.

    Args:
        token_credential: An azure-identity ``TokenCredential``; ``None`` sends no token.
        taskhub_name: The task hub every call addresses.
        worker_id: Sent as ``workerid`` when given.
        resource_id: Token audience override.
    """

    def __init__(
        self,
        token_credential: TokenCredentialLike | None,
        taskhub_name: str,
        worker_id: str | None = None,
        *,
        resource_id: str | None = None,
    ) -> None:
        scope = token_scope(resource_id)
        cache = TokenCache(token_credential, scope) if token_credential is not None else None
        super().__init__(taskhub_name, token_cache=cache, worker_id=worker_id)


class DTSAsyncDefaultClientInterceptorImpl(AsyncSchedulerInterceptor):
    """The asyncio counterpart of :class:`DTSDefaultClientInterceptorImpl` (no worker id)."""

    def __init__(
        self,
        token_credential: AsyncTokenCredentialLike | TokenCredentialLike | None,
        taskhub_name: str,
        *,
        resource_id: str | None = None,
    ) -> None:
        scope = token_scope(resource_id)
        cache = AsyncTokenCache(token_credential, scope) if token_credential is not None else None
        super().__init__(taskhub_name, token_cache=cache)
