"""Bearer-token authentication for every emulator call, and the TLS credentials the server binds with."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc

# The server runs on grpc.aio; its interceptors are coroutines. grpc-stubs declares the base generic, but
# it cannot be subscripted at runtime.
if TYPE_CHECKING:
    ServerInterceptor: TypeAlias = grpc.aio.ServerInterceptor[Any, Any]
else:
    ServerInterceptor = grpc.aio.ServerInterceptor

_SCHEME = "bearer "
#: Environment variable holding the token, so it need not appear on a command line (visible in ``ps``).
TOKEN_ENV = "DTS_EMULATOR_AUTH_TOKEN"
#: Environment variables the emulator's command line and its health probe both read, so a container configured
#: through its environment is probed with the same token and TLS settings it serves with.
TOKEN_FILE_ENV = "DTS_EMULATOR_AUTH_TOKEN_FILE"
TLS_CERT_ENV = "DTS_EMULATOR_TLS_CERT"
TLS_KEY_ENV = "DTS_EMULATOR_TLS_KEY"


def read_token_file(path: str | Path) -> str:
    """The token in ``path`` with surrounding whitespace removed.

    Raises:
        ValueError: if the file is empty.
    """
    token = Path(path).read_text(encoding="utf-8").strip()
    if not token:
        raise ValueError(f"the auth token file {path} is empty")
    return token


def bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The token of the call's ``authorization: Bearer <token>`` header, if there is one."""
    for key, value in metadata:
        if key.lower() != "authorization":
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text[: len(_SCHEME)].lower() == _SCHEME:
            return text[len(_SCHEME) :].strip()
    return None


def _refusal(message: str) -> Callable[[Any, Any], Awaitable[None]]:
    async def refuse(request: Any, context: Any) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return refuse


class BearerTokenInterceptor(ServerInterceptor):
    """Refuses every call, the health probe included, unless it carries the configured bearer token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the auth token must not be empty")
        self._expected = token.encode("utf-8")

    def _problem(self, metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
        given = bearer_token(metadata)
        if given is None:
            return "missing 'authorization: Bearer <token>' metadata; this emulator requires an auth token"
        # Constant-time comparison, so response timing says nothing about how much of a guess was right.
        if not hmac.compare_digest(given.encode("utf-8"), self._expected):
            return "invalid auth token"
        return None

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], handler_call_details: Any) -> Any:
        problem = self._problem(handler_call_details.invocation_metadata or ())
        handler = await continuation(handler_call_details)
        if problem is None or handler is None:
            return handler
        refuse = _refusal(problem)
        args = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(refuse, **args)
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(refuse, **args)
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(refuse, **args)
        return grpc.stream_stream_rpc_method_handler(refuse, **args)


def server_credentials(cert_file: str | Path, key_file: str | Path) -> grpc.ServerCredentials:
    """TLS credentials from PEM files: the server's certificate (chain) and its private key."""
    cert = Path(cert_file).read_bytes()
    key = Path(key_file).read_bytes()
    return grpc.ssl_server_credentials([(key, cert)])
