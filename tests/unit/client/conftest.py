"""Fixtures for client tests: a fake sidecar server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_sidecar import SidecarServer


@pytest.fixture
def sidecar() -> Iterator[SidecarServer]:
    server = SidecarServer().start()
    yield server
    server.stop()
