"""Fixtures of the LangGraph server's tests: LangChain's SDK sources, fetched once from the package registry."""

from __future__ import annotations

import sys
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
