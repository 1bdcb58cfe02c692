"""The sync and async clients expose the same operations, with the same parameters as durabletask 1.12."""

from __future__ import annotations

import inspect
import json
import subprocess
from typing import Any

import pytest

from durabletask import client
from tests.conftest import peer_python

SYNC_ONLY = {"__enter__", "__exit__"}
ASYNC_ONLY = {"__aenter__", "__aexit__"}
# Operations that give a stream of results: an iterator in the sync client, an async iterator (``async for``) in
# the async one, so neither is a coroutine function.
ITERATORS = {"subscribe"}


def public_methods(cls: type[Any]) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_") or name in SYNC_ONLY | ASYNC_ONLY | {"__init__"}
    }


def shape(sig: inspect.Signature) -> list[tuple[str, str, str]]:
    """Parameter names, kinds and defaults; annotations differ legitimately (grpc vs grpc.aio types)."""
    return [(p.name, p.kind.name, repr(p.default)) for p in sig.parameters.values()]


# Options that only mean something for a client that blocks.
SYNC_ONLY_OPTIONS = {"fail_in_event_loop"}


def test_both_clients_have_the_same_operations() -> None:
    sync = public_methods(client.TaskHubGrpcClient)
    asyn = public_methods(client.AsyncTaskHubGrpcClient)
    assert set(sync) - SYNC_ONLY == set(asyn) - ASYNC_ONLY
    for name in set(sync) - SYNC_ONLY:
        sync_shape = [p for p in shape(sync[name]) if name != "__init__" or p[0] not in SYNC_ONLY_OPTIONS]
        assert sync_shape == shape(asyn[name]), name


def test_async_operations_are_coroutines_and_sync_ones_are_not() -> None:
    for name in set(public_methods(client.AsyncTaskHubGrpcClient)) - ASYNC_ONLY - ITERATORS - {"__init__"}:
        assert inspect.iscoroutinefunction(getattr(client.AsyncTaskHubGrpcClient, name)), name
        assert not inspect.iscoroutinefunction(getattr(client.TaskHubGrpcClient, name)), name


def test_return_annotations_match_between_clients() -> None:
    sync = public_methods(client.TaskHubGrpcClient)
    asyn = public_methods(client.AsyncTaskHubGrpcClient)
    for name in set(sync) - SYNC_ONLY - {"__init__"}:
        # A handle type returned by the async client is the same type's asyncio counterpart, named Async<Type>.
        asyn_return = str(asyn[name].return_annotation).replace("AsyncAttached", "Attached")
        asyn_return = asyn_return.replace("AsyncIterator[", "Iterator[")
        assert str(sync[name].return_annotation) == asyn_return, name


_PEER_SCRIPT = """
import inspect, json
from durabletask import client
out = {}
for cls in (client.TaskHubGrpcClient, client.AsyncTaskHubGrpcClient):
    methods = {}
    for name, member in inspect.getmembers(cls, callable):
        if name.startswith('_') and name != '__init__':
            continue
        sig = inspect.signature(member)
        methods[name] = [(p.name, p.kind.name, repr(p.default)) for p in sig.parameters.values()]
    out[cls.__name__] = methods
out['names'] = [n for n in dir(client) if not n.startswith('_') and n[0].isupper()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def peer_shapes() -> dict[str, Any]:
    python = peer_python()
    if python is None:
        pytest.skip("Microsoft's durabletask package (the interop peer) is not installed")
    done = subprocess.run(
        [str(python), "-I", "-c", _PEER_SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.interop
@pytest.mark.parametrize("cls", [client.TaskHubGrpcClient, client.AsyncTaskHubGrpcClient])
def test_signatures_match_durabletask_1_12(peer_shapes: dict[str, Any], cls: type[Any]) -> None:
    theirs = peer_shapes[cls.__name__]
    ours = {name: [list(p) for p in shape(sig)] for name, sig in public_methods(cls).items()}
    for name, params in theirs.items():
        assert name in ours, f"{cls.__name__}.{name} is missing"
        # Their parameters, in order and with the same kinds and defaults; additions only after them, and only
        # as keyword-only parameters with defaults, so every call written for their API works unchanged.
        assert ours[name][: len(params)] == params, f"{cls.__name__}.{name} differs"
        for extra in ours[name][len(params):]:
            assert extra[1] == "KEYWORD_ONLY" and extra[2] != repr(inspect.Parameter.empty), (name, extra)


@pytest.mark.interop
def test_client_module_exports_the_1_12_public_types(peer_shapes: dict[str, Any]) -> None:
    expected = {
        "AsyncTaskHubGrpcClient",
        "CleanEntityStorageResult",
        "EntityQuery",
        "OrchestrationFailedError",
        "OrchestrationQuery",
        "OrchestrationState",
        "OrchestrationStatus",
        "Page",
        "PurgeInstancesResult",
        "TaskHubGrpcClient",
        "EntityInstanceId",
        "EntityMetadata",
        "GrpcChannelOptions",
        "GrpcClientResiliencyOptions",
        "DataConverter",
        "JsonDataConverter",
    }
    assert expected <= set(peer_shapes["names"]), "the peer no longer exports these; update the list"
    missing = {name for name in expected if not hasattr(client, name)}
    assert not missing
