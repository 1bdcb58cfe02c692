"""Fixtures of the LangGraph server's tests: LangChain's SDK sources, fetched once from the package registry."""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import running_in_ci
from tests.langgraph_server.support_server import RegistryUnreachableError, sdk_source


def registry_needed(reason: str) -> None:
    """Fails in CI, skips elsewhere, printing why: a test that needs the package registry cannot run here."""
    message = f"the package registry is needed and cannot be reached: {reason}"
    if running_in_ci():
        pytest.fail(message + " (CI must reach the package registries)")
    print(message, file=sys.stderr)
    pytest.skip(message)


@pytest.fixture(scope="session")
def langgraph_sdk_source() -> Path:
    """The unpacked source distribution of ``langgraph-sdk`` 0.4.14: its client, its suite and the suite's graphs."""
    try:
        return sdk_source()
    except RegistryUnreachableError as error:
        registry_needed(str(error))
        raise  # unreachable: registry_needed skips or fails


def _collect_ignoring_resource_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture(scope="module", autouse=True)
def _collect_everything_at_the_end_of_each_module() -> Iterator[None]:
    """Gives the collector back, at the end of each module, what the tests' collections set aside (see below):
    what the module's fixtures left behind is finalised here, and nothing stays set aside past the module."""
    yield
    gc.unfreeze()
    _collect_ignoring_resource_warnings()


@pytest.fixture(autouse=True)
def _finalise_abandoned_client_sockets() -> Iterator[None]:
    """Finalises, after each test, the sockets that langgraph_sdk's stream watchers leave to the collector.

    The SDK's ``threads.stream`` cancels its background watchers mid-connect when the stream closes; their sockets
    are freed by the garbage collector, whose ``ResourceWarning`` would otherwise land in whichever later test the
    collection happens to run in. Collecting here keeps each test's outcome its own.

    What survives the collection is alive, so it is set aside (``gc.freeze``): the next test's collection then
    looks only at what that test made, rather than at every object of the process again (a full collection of a
    process with LangGraph, LangChain and the server loaded takes a good part of a second).
    """
    yield
    _collect_ignoring_resource_warnings()
    gc.freeze()
