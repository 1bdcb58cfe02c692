"""Every public name of Microsoft's modules exists in ours, except those listed here with their reason.

Microsoft's modules are imported in its own interpreter; their public names are ``dir()`` minus private
names, minus what is only imported from the standard library or a third-party package (modules, classes,
functions, ``typing`` constructs such as TypeVars, ``annotations`` and ``TYPE_CHECKING``).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

MODULES = [
    "durabletask",
    "durabletask.worker",
    "durabletask.client",
    "durabletask.task",
    "durabletask.serialization",
    "durabletask.grpc_options",
    "durabletask.exception_properties",
    "durabletask.azuremanaged.client",
    "durabletask.azuremanaged.worker",
    "durabletask.entities",
    "durabletask.entities.durable_entity",
    "durabletask.entities.entity_context",
    "durabletask.entities.entity_instance_id",
    "durabletask.entities.entity_lock",
    "durabletask.entities.entity_metadata",
    "durabletask.entities.entity_operation_failed_exception",
    "durabletask.testing",
    "durabletask.testing.in_memory_backend",
    "durabletask.extensions.history_export",
    *(
        f"durabletask.extensions.history_export.{name}"
        for name in (
            "activities",
            "azure_blob",
            "client",
            "entity",
            "exceptions",
            "models",
            "orchestrator",
            "serialization",
            "transitions",
            "writer",
        )
    ),
]

_LIST = r"""
import importlib, inspect, json, sys, types

def public_names(module_name):
    module = importlib.import_module(module_name)
    found = {}
    for name in dir(module):
        if name.startswith("_") or name in ("annotations", "TYPE_CHECKING"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        elif inspect.isclass(value) or inspect.isroutine(value):
            origin = getattr(value, "__module__", None) or ""
        elif type(value).__module__ == "typing":
            continue  # TypeVars and aliases
        else:
            origin = module_name  # a value bound in the module itself
        if origin.startswith("durabletask"):
            found[name] = origin
    return found

if __name__ == "__main__":
    print(json.dumps({m: public_names(m) for m in sys.argv[1:]}))
"""

TRACING = "Microsoft's private tracing helpers, imported by its worker and client; ours are in durabletask._tracing"

#: Names of feature families this SDK does not have yet. Nothing here may exist in ours as a stand-in.
KNOWN_ABSENT: dict[str, str] = {
    "durabletask.worker.tracing": TRACING,
    "durabletask.client.tracing": TRACING,
    # Not a feature family: types of Microsoft's worker and test backend internals, without a use in ours.
    "durabletask.worker.ExecutionResults": (
        "the result of Microsoft's private _OrchestrationExecutor; our executor "
        "(durabletask._replay.executor) returns its own ExecutionResult"
    ),
    **{
        f"durabletask.testing.in_memory_backend.{name}": (
            "state records of Microsoft's in-memory backend (no method of it returns one); our test backend "
            "is the emulator, which keeps that state in its own store"
        )
        for name in (
            "OrchestrationInstance",
            "ActivityWorkItem",
            "EntityState",
            "PendingLockRequest",
            "EntityWorkItem",
            "StateWaiter",
        )
    },
}

#: Microsoft's private implementation (defined in ``durabletask.internal`` or ``durabletask.azuremanaged.internal``)
#: that its public modules import for their own use: protobuf and helper modules, request builders, interceptors,
#: the resiliency counters. Not API; checked below to come from those packages.
INTERNAL: dict[str, set[str]] = {
    "durabletask.worker": {
        "DefaultClientInterceptorImpl",
        "FailureTracker",
        "JsonEncodeOutputException",
        "OrchestrationEntityContext",
        "StateShim",
        "get_full_jitter_delay_seconds",
        "is_worker_transport_failure",
        "new_timestamp",
        "helpers",
        "pb",
        "pe",
        "ph",
        "shared",
        "stubs",
        "type_discovery",
    },
    "durabletask.client": {
        "AsyncClientResiliencyInterceptor",
        "ClientResiliencyInterceptor",
        "FailureTracker",
        "build_purge_by_filter_req",
        "build_query_entities_req",
        "build_query_instances_req",
        "build_raise_event_req",
        "build_schedule_new_orchestration_req",
        "build_signal_entity_req",
        "build_terminate_req",
        "check_continuation_token",
        "log_completion_state",
        "prepare_async_interceptors",
        "prepare_sync_interceptors",
        "helpers",
        "history_helpers",
        "pb",
        "shared",
        "stubs",
    },
    "durabletask.azuremanaged.client": {
        "DTSAsyncDefaultClientInterceptorImpl",
        "DTSDefaultClientInterceptorImpl",
        "shared",
    },
    "durabletask.azuremanaged.worker": {"DTSDefaultClientInterceptorImpl", "shared"},
    "durabletask.entities.entity_context": {"StateShim", "helpers", "pb"},
    "durabletask.entities.entity_metadata": {"pb"},
    "durabletask.entities.entity_operation_failed_exception": {"TaskFailureDetails"},
    "durabletask.testing.in_memory_backend": {"helpers", "pb", "stubs"},
    "durabletask.task": {"pb", "pbh"},
}


def _list_ours() -> dict[str, dict[str, str]]:
    namespace: dict[str, Any] = {"__name__": "names"}
    exec(_LIST, namespace)
    return {module: namespace["public_names"](module) for module in MODULES}


@pytest.fixture(scope="module")
def theirs(peer_py: Path) -> dict[str, dict[str, str]]:
    done = subprocess.run(
        [str(peer_py), "-c", _LIST, *MODULES],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, str]] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def ours() -> dict[str, dict[str, str]]:
    return _list_ours()


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_of_microsofts_module_exists(
    module: str, theirs: dict[str, dict[str, str]], ours: dict[str, dict[str, str]]
) -> None:
    expected = {n for n in theirs[module] if f"{module}.{n}" not in KNOWN_ABSENT} - INTERNAL.get(module, set())
    assert sorted(expected - set(ours[module])) == []


@pytest.mark.parametrize("module", MODULES)
def test_the_lists_of_absent_names_are_accurate(
    module: str, theirs: dict[str, dict[str, str]], ours: dict[str, dict[str, str]]
) -> None:
    for name in INTERNAL.get(module, set()):
        assert name in theirs[module] and ".internal" in theirs[module][name], f"{module}.{name}"
    for qualified in KNOWN_ABSENT:
        owner, _, name = qualified.rpartition(".")
        if owner == module:
            assert name in theirs[module], f"{qualified} is no longer in Microsoft's module"
            assert name not in ours[module], f"{qualified} exists now: remove it from KNOWN_ABSENT"


def test_lazy_exports_of_the_package() -> None:
    import durabletask

    expected = {
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
    }
    assert set(durabletask.__all__) == expected
    from durabletask import ConcurrencyOptions, worker

    assert ConcurrencyOptions is worker.ConcurrencyOptions
    from durabletask.payload import store

    assert durabletask.PayloadStore is store.PayloadStore
    assert durabletask.payload.LargePayloadStorageOptions is store.LargePayloadStorageOptions
    with pytest.raises(AttributeError):
        durabletask.NoSuchName  # noqa: B018 - names outside the exports are not invented
