"""Exceptions → wire failure details, and classifying errors returned when completing work items."""

from __future__ import annotations

import traceback

import grpc
from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb

# Deep or cyclic exception chains are cut here; the outermost causes are the useful ones.
_MAX_INNER_FAILURES = 10

# Status codes a backend uses when the work item's lease is gone (expired, or taken by another worker).
_LEASE_LOST_CODES = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION})
# A message naming the token is only a lease problem when it is not about credentials.
_AUTH_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


def error_type_name(exc_type: type[BaseException]) -> str:
    """The recorded error type: ``module.QualifiedName``, as the other Durable Task SDKs record it."""
    module = getattr(exc_type, "__module__", None)
    qualname = getattr(exc_type, "__qualname__", exc_type.__name__)
    return f"{module}.{qualname}" if module else qualname


def _cause(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def failure_details(exc: BaseException) -> pb.TaskFailureDetails:
    """Failure details for ``exc`` (type, message, traceback), with its causes as inner failures."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) <= _MAX_INNER_FAILURES and all(current is not c for c in chain):
        chain.append(current)
        current = _cause(current)
    details: pb.TaskFailureDetails | None = None
    for item in reversed(chain):
        outer = pb.TaskFailureDetails(
            errorType=error_type_name(type(item)),
            errorMessage=str(item),
            stackTrace=wrappers_pb2.StringValue(value="".join(traceback.format_tb(item.__traceback__))),
        )
        if details is not None:
            outer.innerFailure.CopyFrom(details)
        details = outer
    assert details is not None  # the chain always holds ``exc`` itself
    return details


def status_code(error: grpc.RpcError) -> grpc.StatusCode | None:
    """The status code of a failed call, when the error carries one."""
    code = getattr(error, "code", None)
    return code() if callable(code) else None


def _details(error: grpc.RpcError) -> str:
    details = getattr(error, "details", None)
    text = details() if callable(details) else None
    return text if isinstance(text, str) else str(error)


def is_lease_lost(error: grpc.RpcError) -> bool:
    """Whether a rejected completion means the work item is no longer ours (so it is safe to drop)."""
    code = status_code(error)
    if code in _LEASE_LOST_CODES:
        return True
    return code not in _AUTH_CODES and "token" in _details(error).lower()


def describe(error: grpc.RpcError) -> str:
    """``CODE: details`` for log messages."""
    code = status_code(error)
    return f"{code.name if code is not None else 'UNKNOWN'}: {_details(error)}"
