"""Every public name of Microsoft's modules exists in ours, except those listed here with their reason.

Microsoft's modules are imported in its own interpreter; their public names are ``dir()`` minus private
names, minus what is only imported from the standard library or a third-party package (modules, classes,
functions, ``typing`` constructs such as TypeVars, ``annotations`` and ``TYPE_CHECKING``); protocol message
classes count (each SDK's generated module has a name of its own). What ``from module import *`` gives, and
``__all__``, are compared for the modules the package exports lazily.
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
from google.protobuf.message import Message

def public_names(module_name):
    module = importlib.import_module(module_name)
    found = {}
    for name in dir(module):
        if name.startswith("_") or name in ("annotations", "TYPE_CHECKING"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        elif inspect.isclass(value) and issubclass(value, Message):
            origin = "durabletask (protocol message)"  # each SDK registers its generated module under its own name
        elif inspect.isclass(value) or inspect.isroutine(value):
            origin = getattr(value, "__module__", None) or ""
        elif type(value).__module__ == "typing":
            continue  # TypeVars and aliases
        else:
            origin = module_name  # a value bound in the module itself
        if origin.startswith("durabletask"):
            found[name] = origin
    return found

def star_names(module_name):
    # What ``from module import *`` binds, restricted to the SDK's own names as above.
    namespace = {}
    exec(f"from {module_name} import *", namespace)
    module = importlib.import_module(module_name)
    own = public_names(module_name)
    return {"all": sorted(getattr(module, "__all__", None) or []) if hasattr(module, "__all__") else None,
            "star": sorted(name for name in namespace if name in own)}

if __name__ == "__main__":
    if sys.argv[1] == "--star":
        print(json.dumps({m: star_names(m) for m in sys.argv[2:]}))
    else:
        print(json.dumps({m: public_names(m) for m in sys.argv[1:]}))
"""

#: The modules the package imports on first use of an exported name or submodule (``durabletask.__getattr__``).
LAZY_MODULES = [
    "durabletask.entities",
    "durabletask.exception_properties",
    "durabletask.grpc_options",
    "durabletask.payload",
    "durabletask.payload.store",
    "durabletask.serialization",
    "durabletask.task",
    "durabletask.worker",
]

TRACING = "Microsoft's private tracing helpers, imported by its worker and client; ours are in durabletask._tracing"

#: Names of feature families this SDK does not have yet. Nothing here may exist in ours as a stand-in.
KNOWN_ABSENT: dict[str, str] = {
    "durabletask.worker.tracing": TRACING,
    "durabletask.client.tracing": TRACING,
}

#: Microsoft's private implementation (defined in ``durabletask.internal`` or ``durabletask.azuremanaged.internal``)
#: that its public modules import for their own use: protobuf and helper modules, request builders, helper
#: functions. Not API; checked below to come from those packages. (The classes among them that applications use,
#: interceptors, the resiliency counter, ``StateShim`` and the like, are required in ours.)
INTERNAL: dict[str, set[str]] = {
    "durabletask.worker": {
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
    "durabletask.azuremanaged.client": {"shared"},
    "durabletask.azuremanaged.worker": {"shared"},
    "durabletask.entities.entity_context": {"helpers", "pb"},
    "durabletask.entities.entity_metadata": {"pb"},
    "durabletask.testing.in_memory_backend": {"helpers", "pb", "stubs"},
    "durabletask.task": {"pb", "pbh"},
}


def _lister() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "names"}
    exec(_LIST, namespace)
    return namespace


def _list_ours() -> dict[str, dict[str, str]]:
    return {module: _lister()["public_names"](module) for module in MODULES}


def _run_peer(peer_py: Path, *args: str) -> Any:
    done = subprocess.run(
        [str(peer_py), "-c", _LIST, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def theirs(peer_py: Path) -> dict[str, dict[str, str]]:
    result: dict[str, dict[str, str]] = _run_peer(peer_py, *MODULES)
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


@pytest.mark.parametrize("module", LAZY_MODULES)
def test_all_and_star_imports_of_lazily_exported_modules_are_microsofts(peer_py: Path, module: str) -> None:
    theirs = _run_peer(peer_py, "--star", module)[module]
    ours = _lister()["star_names"](module)
    # Microsoft's private modules a star import also binds (``pb`` and the like) are not required in ours.
    assert ours["star"] == [name for name in theirs["star"] if name not in INTERNAL.get(module, set())]
    if theirs["all"] is not None:
        assert ours["all"] == theirs["all"]
