"""Channel construction: address parsing, TLS, channel options, and per-call metadata interceptors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

import grpc
import grpc.aio
import grpc.experimental

from durabletask.grpc_options import GrpcChannelOptions

#: Where clients and workers connect when no address is given (the local sidecar/emulator port).
DEFAULT_HOST_ADDRESS = "localhost:4001"

# grpc-stubs declares the interceptor bases generic, but they cannot be subscripted at runtime.
if TYPE_CHECKING:
    _UnaryUnary: TypeAlias = grpc.UnaryUnaryClientInterceptor[Any, Any]
    _UnaryStream: TypeAlias = grpc.UnaryStreamClientInterceptor[Any, Any]
    _StreamUnary: TypeAlias = grpc.StreamUnaryClientInterceptor[Any, Any]
    _StreamStream: TypeAlias = grpc.StreamStreamClientInterceptor[Any, Any]
    _AioUnaryUnary: TypeAlias = grpc.aio.UnaryUnaryClientInterceptor[Any, Any]
    _AioUnaryStream: TypeAlias = grpc.aio.UnaryStreamClientInterceptor[Any, Any]
    _AioStreamUnary: TypeAlias = grpc.aio.StreamUnaryClientInterceptor[Any, Any]
    _AioStreamStream: TypeAlias = grpc.aio.StreamStreamClientInterceptor[Any, Any]
else:
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor
    _UnaryStream = grpc.UnaryStreamClientInterceptor
    _StreamUnary = grpc.StreamUnaryClientInterceptor
    _StreamStream = grpc.StreamStreamClientInterceptor
    _AioUnaryUnary = grpc.aio.UnaryUnaryClientInterceptor
    _AioUnaryStream = grpc.aio.UnaryStreamClientInterceptor
    _AioStreamUnary = grpc.aio.StreamUnaryClientInterceptor
    _AioStreamStream = grpc.aio.StreamStreamClientInterceptor

ClientInterceptor: TypeAlias = "_UnaryUnary | _UnaryStream | _StreamUnary | _StreamStream"
AsyncClientInterceptor: TypeAlias = "_AioUnaryUnary | _AioUnaryStream | _AioStreamUnary | _AioStreamStream"
Metadata: TypeAlias = Sequence[tuple[str, str]]

_SECURE_SCHEMES = ("https://", "grpcs://")
_INSECURE_SCHEMES = ("http://", "grpc://")


def get_default_host_address() -> str:
    """The address used when none is configured."""
    return DEFAULT_HOST_ADDRESS


def parse_address(host_address: str | None, secure_channel: bool = False) -> tuple[str, bool]:
    """Split an address into ``(target, use_tls)``.

    A URL-style scheme decides TLS on its own (``https``/``grpcs`` on, ``http``/``grpc`` off) and is
    stripped because gRPC targets are bare ``host:port``; without a scheme ``secure_channel`` decides.
    """
    address = get_default_host_address() if host_address is None else host_address.strip()
    lowered = address.lower()
    for scheme in _SECURE_SCHEMES:
        if lowered.startswith(scheme):
            return address[len(scheme) :].rstrip("/"), True
    for scheme in _INSECURE_SCHEMES:
        if lowered.startswith(scheme):
            return address[len(scheme) :].rstrip("/"), False
    return address, secure_channel


class _CallDetails(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class _SyncCallDetails(_CallDetails, grpc.ClientCallDetails):
    """Concrete call details: the sync API only defines the abstract interface."""


def _merged(existing: Any, extra: Metadata) -> list[tuple[str, Any]]:
    merged: list[tuple[str, Any]] = [(str(k), v) for k, v in (existing or ())]
    merged.extend(extra)
    return merged


class DefaultClientInterceptorImpl(
    _UnaryUnary,
    _UnaryStream,
    _StreamUnary,
    _StreamStream,
):
    """Adds metadata (e.g. a task hub name or auth header) to every call on a sync channel.

    The name and hooks are those of Microsoft's class, which applications subclass: ``self._metadata`` is the
    list of headers (kept as given, so changing it changes later calls), and ``_intercept_call(details)``
    returns the call details to use, which an override may compute per call before calling the base.
    :meth:`metadata` is a further hook of ours for headers computed per call.

    Args:
        metadata: ``(key, value)`` pairs sent with every call; ``None`` sends none.
    """

    def __init__(self, metadata: list[tuple[str, str]] | None) -> None:
        super().__init__()
        self._metadata = metadata

    def metadata(self) -> Metadata:
        """The headers for the next call."""
        return self._metadata or ()

    def _intercept_call(self, client_call_details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        extra = self.metadata()
        if not extra:
            return client_call_details
        details = client_call_details
        return _SyncCallDetails(
            details.method,
            details.timeout,
            _merged(details.metadata, extra),
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._intercept_call(client_call_details), request)

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._intercept_call(client_call_details), request)

    def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(self._intercept_call(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(self._intercept_call(client_call_details), request_iterator)


class DefaultAsyncClientInterceptorImpl(
    _AioUnaryUnary,
    _AioUnaryStream,
    _AioStreamUnary,
    _AioStreamStream,
):
    """The asyncio counterpart of :class:`DefaultClientInterceptorImpl` (Microsoft's name and hooks as well).

    ``_intercept_call`` and :meth:`metadata` are awaitables here, so an override can refresh a token without
    blocking the event loop.
    """

    def __init__(self, metadata: list[tuple[str, str]] | None) -> None:
        self._metadata = metadata

    async def metadata(self) -> Metadata:
        """The headers to add to the next call."""
        return self._metadata or ()

    async def _intercept_call(self, client_call_details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        extra = await self.metadata()
        if not extra:
            return client_call_details
        details = client_call_details
        return grpc.aio.ClientCallDetails(
            details.method,
            details.timeout,
            grpc.aio.Metadata(*_merged(details.metadata, extra)),
            details.credentials,
            details.wait_for_ready,
        )

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(await self._intercept_call(client_call_details), request)

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(await self._intercept_call(client_call_details), request)

    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await continuation(await self._intercept_call(client_call_details), request_iterator)

    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await continuation(await self._intercept_call(client_call_details), request_iterator)


class _AioUnaryStreamOnly(_AioUnaryStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await self._inner.intercept_unary_stream(continuation, client_call_details, request)


class _AioStreamUnaryOnly(_AioStreamUnary):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await self._inner.intercept_stream_unary(continuation, client_call_details, request_iterator)


class _AioStreamStreamOnly(_AioStreamStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await self._inner.intercept_stream_stream(continuation, client_call_details, request_iterator)


def split_aio_interceptors(interceptors: Sequence[AsyncClientInterceptor]) -> list[AsyncClientInterceptor]:
    """One entry per call kind an interceptor handles.

    ``grpc.aio`` files each interceptor under the first call kind it matches, so an interceptor that
    implements all four would silently skip streaming calls; thin per-kind adapters restore them.
    """
    out: list[AsyncClientInterceptor] = []
    for interceptor in interceptors:
        kinds: list[tuple[type[Any], Callable[[Any], AsyncClientInterceptor] | None]] = [
            (_AioUnaryUnary, None),
            (_AioUnaryStream, _AioUnaryStreamOnly),
            (_AioStreamUnary, _AioStreamUnaryOnly),
            (_AioStreamStream, _AioStreamStreamOnly),
        ]
        matched = [adapter for kind, adapter in kinds if isinstance(interceptor, kind)]
        if len(matched) <= 1:
            out.append(interceptor)
            continue
        out.append(interceptor)  # filed under its first kind, as grpc.aio would
        out.extend(adapter(interceptor) for adapter in matched[1:] if adapter is not None)
    return out


def _credentials(root_certificates: bytes | None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(root_certificates=root_certificates)


def create_channel(
    host_address: str | None,
    *,
    secure_channel: bool = False,
    interceptors: Sequence[ClientInterceptor] | None = None,
    options: GrpcChannelOptions | None = None,
    metadata: Metadata | None = None,
    root_certificates: bytes | None = None,
    single_threaded_streams: bool = False,
) -> grpc.Channel:
    """Open a blocking channel to a Durable Task sidecar or scheduler.

    Args:
        host_address: ``host:port``, optionally prefixed by ``http://``, ``https://``, ``grpc://`` or
            ``grpcs://`` (the secure schemes force TLS); ``None`` means :data:`DEFAULT_HOST_ADDRESS`.
        secure_channel: Use TLS when the address has no scheme.
        interceptors: Extra client interceptors, applied before the metadata interceptor.
        options: Channel arguments (message sizes, keepalive, retries).
        metadata: Headers attached to every call.
        root_certificates: PEM roots for TLS; ``None`` uses the system defaults.
        single_threaded_streams: Read server streams on the thread that iterates them (grpc's
            ``SingleThreadedUnaryStream``) instead of receiving each message on grpc's channel thread and
            handing it over: one thread switch less per message, for a worker's work-item stream. Such a
            stream's status can be read only once it has ended, which is when a worker reads it.
    """
    target, use_tls = parse_address(host_address, secure_channel)
    args = options.to_grpc_options() if options is not None else []
    if single_threaded_streams:
        args.append((grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1))
    channel = (
        grpc.secure_channel(target, _credentials(root_certificates), options=args)
        if use_tls
        else grpc.insecure_channel(target, options=args)
    )
    # The caller's interceptors run first and the metadata interceptor last, as in Microsoft's SDK, so
    # their headers come first on the wire.
    chain: list[ClientInterceptor] = list(interceptors or ())
    if metadata:
        chain.append(DefaultClientInterceptorImpl(list(metadata)))
    return grpc.intercept_channel(channel, *chain) if chain else channel


def intercept_given_channel(
    channel: grpc.Channel, metadata: Metadata | None, interceptors: Sequence[ClientInterceptor] | None
) -> grpc.Channel:
    """A caller's channel with the headers and interceptors a client or worker was also given.

    Microsoft's SDK drops them silently when ``channel=`` is given, so a scheduler worker would serve the
    ``default`` task hub; here they apply exactly as on a channel the SDK opens itself.
    """
    # The caller's interceptors run first and the metadata interceptor last, as in Microsoft's SDK, so
    # their headers come first on the wire.
    chain: list[ClientInterceptor] = list(interceptors or ())
    if metadata:
        chain.append(DefaultClientInterceptorImpl(list(metadata)))
    return grpc.intercept_channel(channel, *chain) if chain else channel


def create_aio_channel(
    host_address: str | None,
    *,
    secure_channel: bool = False,
    interceptors: Sequence[AsyncClientInterceptor] | None = None,
    options: GrpcChannelOptions | None = None,
    metadata: Metadata | None = None,
    root_certificates: bytes | None = None,
) -> grpc.aio.Channel:
    """Open an asyncio channel; arguments as for :func:`create_channel`."""
    target, use_tls = parse_address(host_address, secure_channel)
    args = options.to_grpc_options() if options is not None else None
    chain: list[AsyncClientInterceptor] = list(interceptors or ())
    if metadata:
        chain.append(DefaultAsyncClientInterceptorImpl(list(metadata)))
    chain = split_aio_interceptors(chain)
    if use_tls:
        return grpc.aio.secure_channel(
            target, _credentials(root_certificates), options=args, interceptors=cast(Any, chain or None)
        )
    return grpc.aio.insecure_channel(target, options=args, interceptors=cast(Any, chain or None))
