"""The one mapping from gRPC status codes to this SDK's exceptions."""

from __future__ import annotations

from typing import Any, ClassVar

import grpc

from durabletask._errors import DurableTaskError

__all__ = [
    "AlreadyExistsError",
    "CancelledError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "RpcStatusError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "map_rpc_error",
]


class RpcStatusError(DurableTaskError, grpc.RpcError):
    """A call to the service failed with a non-OK gRPC status.

    It is also a :class:`grpc.RpcError` with ``code()`` and ``details()``, so code written against the
    raw gRPC errors keeps working.
    """

    status_code: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN

    def __init__(
        self,
        details: str = "",
        *,
        code: grpc.StatusCode | None = None,
        method: str | None = None,
        trailing_metadata: Any = None,
    ) -> None:
        self._code = code if code is not None else self.status_code
        self._details = details
        self.method = method
        self._trailing_metadata = trailing_metadata
        where = f"{method} failed" if method else "call failed"
        super().__init__(f"{where} with {self._code.name}: {details}" if details else f"{where} with {self._code.name}")

    def code(self) -> grpc.StatusCode:
        """The gRPC status code."""
        return self._code

    def details(self) -> str:
        """The server's status message."""
        return self._details

    def trailing_metadata(self) -> Any:
        """Trailing metadata sent with the status, if any."""
        return self._trailing_metadata


class NotFoundError(RpcStatusError):
    """The instance, entity or other resource does not exist."""

    status_code = grpc.StatusCode.NOT_FOUND


class AlreadyExistsError(RpcStatusError):
    """An instance with this ID exists and the reuse policy does not allow replacing it."""

    status_code = grpc.StatusCode.ALREADY_EXISTS


class InvalidArgumentError(RpcStatusError, ValueError):
    """The service rejected an argument."""

    status_code = grpc.StatusCode.INVALID_ARGUMENT


class FailedPreconditionError(RpcStatusError):
    """The operation does not apply in the instance's current state (e.g. resuming a running one)."""

    status_code = grpc.StatusCode.FAILED_PRECONDITION


class UnauthenticatedError(RpcStatusError):
    """The call carried no valid credentials."""

    status_code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDeniedError(RpcStatusError):
    """The credentials are not allowed to perform this operation."""

    status_code = grpc.StatusCode.PERMISSION_DENIED


class UnavailableError(RpcStatusError):
    """The service could not be reached (down, restarting, or a network problem); usually transient."""

    status_code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceededError(RpcStatusError, TimeoutError):
    """The call's deadline passed before the service answered."""

    status_code = grpc.StatusCode.DEADLINE_EXCEEDED


class ResourceExhaustedError(RpcStatusError):
    """A quota or message size limit was hit."""

    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class CancelledError(RpcStatusError):
    """The call was cancelled (usually because the channel was closed)."""

    status_code = grpc.StatusCode.CANCELLED


class InternalError(RpcStatusError):
    """The service hit an internal error."""

    status_code = grpc.StatusCode.INTERNAL


class UnimplementedError(RpcStatusError):
    """The service does not implement this operation."""

    status_code = grpc.StatusCode.UNIMPLEMENTED


_BY_CODE: dict[grpc.StatusCode, type[RpcStatusError]] = {
    cls.status_code: cls
    for cls in (
        NotFoundError,
        AlreadyExistsError,
        InvalidArgumentError,
        FailedPreconditionError,
        UnauthenticatedError,
        PermissionDeniedError,
        UnavailableError,
        DeadlineExceededError,
        ResourceExhaustedError,
        CancelledError,
        InternalError,
        UnimplementedError,
    )
}


def error_class(code: grpc.StatusCode) -> type[RpcStatusError]:
    """The exception type raised for ``code`` (:class:`RpcStatusError` itself for unlisted codes)."""
    return _BY_CODE.get(code, RpcStatusError)


def map_rpc_error(err: grpc.RpcError, *, method: str | None = None) -> RpcStatusError:
    """Translate a raw gRPC error (sync or asyncio) into the matching :class:`RpcStatusError`.

    An error that is already mapped is returned unchanged. The caller raises the result ``from err``
    so the original stays visible in tracebacks.
    """
    if isinstance(err, RpcStatusError):
        return err
    code_fn = getattr(err, "code", None)
    code = code_fn() if callable(code_fn) else None
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    details_fn = getattr(err, "details", None)
    details = details_fn() if callable(details_fn) else None
    trailers_fn = getattr(err, "trailing_metadata", None)
    trailers = trailers_fn() if callable(trailers_fn) else None
    return error_class(code)(details or "", code=code, method=method, trailing_metadata=trailers)
