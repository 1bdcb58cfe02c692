"""Per-call scheduler headers (task hub, user agent, worker id, bearer token) as sync and aio interceptors."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence

from durabletask import DISTRIBUTION_NAME, __version__
from durabletask._grpc.channel import (
    AsyncClientInterceptor,
    ClientInterceptor,
    DefaultAsyncClientInterceptorImpl,
    DefaultClientInterceptorImpl,
)
from durabletask.azuremanaged._tokens import (
    AsyncTokenCache,
    AsyncTokenCredentialLike,
    TokenCache,
    TokenCredentialLike,
    token_scope,
)
from durabletask.grpc_options import GrpcChannelOptions

__all__ = [
    "AUTHORIZATION_HEADER",
    "TASKHUB_HEADER",
    "USER_AGENT_HEADER",
    "WORKER_ID_HEADER",
    "AsyncSchedulerInterceptor",
    "SchedulerInterceptor",
    "async_interceptors",
    "default_channel_options",
    "new_worker_id",
    "scheduler_headers",
    "sync_interceptors",
    "user_agent",
]

TASKHUB_HEADER = "taskhub"
# gRPC reserves "user-agent" for its own transport string, so the scheduler reads this one instead.
USER_AGENT_HEADER = "x-user-agent"
WORKER_ID_HEADER = "workerid"
AUTHORIZATION_HEADER = "authorization"

_MIB = 1024 * 1024


def user_agent() -> str:
    """The ``x-user-agent`` value: ``<distribution>/<version>``."""
    return f"{DISTRIBUTION_NAME}/{__version__}"


def new_worker_id() -> str:
    """A worker identity unique per process and instance: ``<hostname>:<pid>:<uuid4>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4()}"


def scheduler_headers(taskhub: str, worker_id: str | None = None) -> list[tuple[str, str]]:
    """The headers every call to the scheduler carries, apart from the bearer token."""
    if not taskhub or not taskhub.strip():
        raise ValueError("taskhub cannot be empty: pass the name of the task hub to connect to")
    headers = [(TASKHUB_HEADER, taskhub), (USER_AGENT_HEADER, user_agent())]
    if worker_id is not None:
        headers.append((WORKER_ID_HEADER, worker_id))
    return headers


def default_channel_options() -> GrpcChannelOptions:
    """Channel settings used when the caller supplies none.

    Keepalive pings every 30 s keep long-lived work-item streams alive through load balancers and NAT
    that drop idle connections after a minute or more, and detect a dead peer within 10 s of a missed
    ping. Messages up to 16 MiB leave room for orchestration histories carrying many payloads of the
    service's 1 MiB limit (gRPC's own default is 4 MiB).
    """
    return GrpcChannelOptions(
        max_receive_message_length=16 * _MIB,
        max_send_message_length=16 * _MIB,
        keepalive_time_ms=30_000,
        keepalive_timeout_ms=10_000,
    )


class SchedulerInterceptor(DefaultClientInterceptorImpl):
    """Adds the scheduler headers, and a bearer token when a credential is configured, to every sync call.

    Args:
        taskhub: The task hub every call addresses.
        token_cache: Source of bearer tokens; ``None`` sends no ``authorization`` header (emulator).
        worker_id: Sent as ``workerid`` by workers so the scheduler can tell them apart.
    """

    def __init__(self, taskhub: str, *, token_cache: TokenCache | None = None, worker_id: str | None = None):
        super().__init__(scheduler_headers(taskhub, worker_id))
        self._token_cache = token_cache

    def metadata(self) -> list[tuple[str, str]]:
        return self.headers()

    def headers(self) -> list[tuple[str, str]]:
        """The headers for the next call; may block on a token refresh.

        ``self._metadata`` (the compatible API's attribute) holds the fixed ones, so a subclass that changes it
        changes what is sent.
        """
        fixed = list(self._metadata or ())
        if self._token_cache is None:
            return fixed
        return [*fixed, (AUTHORIZATION_HEADER, f"Bearer {self._token_cache.get_token()}")]


class AsyncSchedulerInterceptor(DefaultAsyncClientInterceptorImpl):
    """The asyncio counterpart of :class:`SchedulerInterceptor`; token refreshes never block the loop."""

    def __init__(self, taskhub: str, *, token_cache: AsyncTokenCache | None = None, worker_id: str | None = None):
        super().__init__(scheduler_headers(taskhub, worker_id))
        self._token_cache = token_cache

    async def metadata(self) -> list[tuple[str, str]]:
        """The headers for the next call, awaiting a token refresh when one is due."""
        static = list(await super().metadata())
        if self._token_cache is None:
            return static
        return [*static, (AUTHORIZATION_HEADER, f"Bearer {await self._token_cache.get_token()}")]


def sync_interceptors(
    extra: Sequence[ClientInterceptor] | None,
    *,
    taskhub: str,
    token_credential: TokenCredentialLike | None,
    resource_id: str | None,
    worker_id: str | None = None,
) -> list[ClientInterceptor]:
    """The caller's interceptors followed by the scheduler's, for a blocking channel.

    The scope is resolved even without a credential so a bad ``resource_id`` fails at construction.
    """
    scope = token_scope(resource_id)
    cache = TokenCache(token_credential, scope) if token_credential is not None else None
    return [*(extra or ()), SchedulerInterceptor(taskhub, token_cache=cache, worker_id=worker_id)]


def async_interceptors(
    extra: Sequence[AsyncClientInterceptor] | None,
    *,
    taskhub: str,
    token_credential: AsyncTokenCredentialLike | TokenCredentialLike | None,
    resource_id: str | None,
) -> list[AsyncClientInterceptor]:
    """The caller's interceptors followed by the scheduler's, for an asyncio channel."""
    scope = token_scope(resource_id)
    cache = AsyncTokenCache(token_credential, scope) if token_credential is not None else None
    return [*(extra or ()), AsyncSchedulerInterceptor(taskhub, token_cache=cache)]
