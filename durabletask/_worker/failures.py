"""Classifying the gRPC errors a backend returns when the worker completes or abandons a work item."""

from __future__ import annotations

import grpc

# Status codes a backend uses when the work item's lease is gone (expired, or taken by another worker):
# the token no longer names a work item (NOT_FOUND) or no longer allows completing it (FAILED_PRECONDITION).
_LEASE_LOST_CODES = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION})


def status_code(error: grpc.RpcError) -> grpc.StatusCode | None:
    """The status code of a failed call, when the error carries one."""
    code = getattr(error, "code", None)
    return code() if callable(code) else None


def _details(error: grpc.RpcError) -> str:
    details = getattr(error, "details", None)
    text = details() if callable(details) else None
    return text if isinstance(text, str) else str(error)


def is_lease_lost(error: grpc.RpcError) -> bool:
    """Whether a rejected completion means the work item is no longer ours (so it is safe to drop).

    Decided by the status code alone: other codes (a malformed request, credentials, a server fault) are
    reported as failures even when their message mentions the completion token.
    """
    return status_code(error) in _LEASE_LOST_CODES


def describe(error: grpc.RpcError) -> str:
    """``CODE: details`` for log messages."""
    code = status_code(error)
    return f"{code.name if code is not None else 'UNKNOWN'}: {_details(error)}"
