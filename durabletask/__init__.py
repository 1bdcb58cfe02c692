"""Python SDK for the Durable Task Scheduler: durable orchestrations, activities and entities over gRPC.

The option and filter classes are importable from the package itself, as from Microsoft's; they (and the
submodules below) load on first use, so ``import durabletask`` stays cheap for client-only programs. Importing
it changes nothing of the process (environment, grpc's settings, logging, OpenTelemetry, import machinery); the
one process-wide setting the SDK offers, ``durabletask.grpc_options.enable_thread_polling()``, is opt-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durabletask.exception_properties import ExceptionPropertiesProvider
    from durabletask.grpc_options import GrpcChannelOptions, GrpcRetryPolicyOptions
    from durabletask.payload.store import LargePayloadStorageOptions, PayloadStore
    from durabletask.worker import (
        ActivityWorkItemFilter,
        ConcurrencyOptions,
        EntityWorkItemFilter,
        OrchestrationWorkItemFilter,
        VersioningOptions,
        WorkItemFilters,
    )

PACKAGE_NAME = "durabletask"
DISTRIBUTION_NAME = "dtscale"
__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "ActivityWorkItemFilter": "durabletask.worker",
    "ConcurrencyOptions": "durabletask.worker",
    "EntityWorkItemFilter": "durabletask.worker",
    "ExceptionPropertiesProvider": "durabletask.exception_properties",
    "GrpcChannelOptions": "durabletask.grpc_options",
    "GrpcRetryPolicyOptions": "durabletask.grpc_options",
    "LargePayloadStorageOptions": "durabletask.payload.store",
    "OrchestrationWorkItemFilter": "durabletask.worker",
    "PayloadStore": "durabletask.payload.store",
    "VersioningOptions": "durabletask.worker",
    "WorkItemFilters": "durabletask.worker",
}
# Submodules reachable as attributes without importing them first, as in Microsoft's package.
_SUBMODULES = frozenset({"entities", "grpc_options", "internal", "payload", "serialization", "task", "worker"})

__all__ = [
    "ActivityWorkItemFilter",
    "ConcurrencyOptions",
    "EntityWorkItemFilter",
    "ExceptionPropertiesProvider",
    "GrpcChannelOptions",
    "GrpcRetryPolicyOptions",
    "LargePayloadStorageOptions",
    "OrchestrationWorkItemFilter",
    "PayloadStore",
    "VersioningOptions",
    "WorkItemFilters",
]


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
