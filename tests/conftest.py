"""Suite-wide fixtures: where Microsoft's SDK (the interop peer) lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# --backend / --connection-string: the scenario suites against an external DTS endpoint.
pytest_plugins = ("tests.external.plugin",)


def peer_python() -> Path | None:
    """The interpreter of the isolated venv holding Microsoft's SDK, or None when it is not installed."""
    candidates = [os.environ.get("DTS_PEER_PYTHON"), ROOT / ".peer-venv" / "bin" / "python"]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def peer_py() -> Path:
    found = peer_python()
    if found is None:
        pytest.skip("the interop peer venv is missing (python3 dev.py test creates it)")
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--endpoint", default=None, help="run e2e tests against this host:port instead")
    parser.addoption("--taskhub", default=None, help="task hub to use with --endpoint (default: 'default')")
