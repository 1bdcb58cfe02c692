"""The gRPC client polling that ``import durabletask`` sets up for grpc's first import (durabletask/_grpc_polling.py).

Each case needs an interpreter in which grpc has not been imported yet, so it runs in a fresh one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from durabletask import _grpc_polling
from durabletask._grpc_polling import Polling

ROOT = Path(__file__).resolve().parents[3]
INSTALLED = _grpc_polling.grpcio_version(str(Path(grpc.__file__).parent))

REPORT = """
import json, os, sys
import grpc
import durabletask._grpc_polling as polling
print(json.dumps({
    "state": polling.state().name,
    "variable": os.environ.get("GRPC_EXPERIMENTS"),
    "loader": type(grpc.__loader__).__name__,
    "spec_loader": type(grpc.__spec__.loader).__name__,
    "finders": [type(f).__name__ for f in sys.meta_path],
}))
"""


def _run(code: str, *, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"GRPC_EXPERIMENTS", "GRPC_TRACE", "GRPC_VERBOSITY"}}
    environ["PYTHONPATH"] = str(ROOT)
    environ.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def _report(first: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = _run(first + "\n" + REPORT, env=env).stdout.strip().splitlines()[-1]
    found: dict[str, object] = json.loads(out)
    return found


def test_the_installed_grpcio_is_read_without_importing_it() -> None:
    assert INSTALLED is not None
    assert grpc.__version__ == INSTALLED


def test_importing_durabletask_first_applies_it_for_grpc_s_import_alone() -> None:
    found = _report("import durabletask.client")
    if not _grpc_polling.verified(str(INSTALLED)):
        assert found["state"] == Polling.UNVERIFIED_GRPC.name
        return
    assert found["state"] == Polling.APPLIED.name
    # The environment is as it was: child processes inherit nothing.
    assert found["variable"] is None
    # grpc keeps its own loader, and the finder is gone.
    assert found["loader"] == found["spec_loader"] == "SourceFileLoader"
    assert "_FirstGrpcImportFinder" not in found["finders"]  # type: ignore[operator]


def test_a_setting_of_the_environment_is_left_alone_even_an_empty_one() -> None:
    for value in ("", "-event_engine_listener"):
        found = _report("import durabletask.worker", env={"GRPC_EXPERIMENTS": value})
        assert found["state"] == Polling.CHOSEN_BY_ENVIRONMENT.name
        assert found["variable"] == value


def test_a_grpc_imported_before_durabletask_is_left_alone() -> None:
    found = _report("import grpc\nimport durabletask.worker")
    assert found["state"] == Polling.GRPC_ALREADY_IMPORTED.name
    assert found["variable"] is None


def test_a_grpcio_it_was_not_verified_on_is_left_alone() -> None:
    found = _report("import durabletask._grpc_polling as p\np.VERIFIED_SERIES = ('0.0.',)")
    assert found["state"] == Polling.UNVERIFIED_GRPC.name
    assert found["variable"] is None


def test_importing_durabletask_alone_does_not_import_grpc() -> None:
    out = _run("import sys, durabletask, durabletask._grpc_polling as p; print('grpc' in sys.modules, p.state().name)")
    assert out.stdout.split() == ["False", Polling.PENDING.name]


@pytest.fixture
def listener() -> Iterator[int]:
    """A plain TCP listener: enough for a channel to connect, which is all the trace below needs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


CONNECT = """
import grpc
channel = grpc.insecure_channel("127.0.0.1:{port}")
try:
    grpc.channel_ready_future(channel).result(timeout=1)
except grpc.FutureTimeoutError:
    pass
channel.close()
"""


def test_the_connection_is_then_made_by_grpc_s_thread_polled_client_and_otherwise_by_its_event_engine(
    listener: int,
) -> None:
    trace = {"GRPC_TRACE": "tcp", "GRPC_VERBOSITY": "debug"}
    applied = _run("import durabletask.client\n" + CONNECT.format(port=listener), env=trace).stderr
    default = _run("import grpc\nimport durabletask.client\n" + CONNECT.format(port=listener), env=trace).stderr
    # grpc's thread-polled client connects in tcp_client_posix; its event engine's client does not use it.
    assert "tcp_client_posix.cc" not in default, default[-2000:]
    if _grpc_polling.verified(str(INSTALLED)):
        assert "tcp_client_posix.cc" in applied, applied[-2000:]
    else:  # nothing was changed
        assert "tcp_client_posix.cc" not in applied, applied[-2000:]


def test_versions(tmp_path: Path) -> None:
    assert _grpc_polling.verified("1.85.3")
    assert not _grpc_polling.verified("1.86.0")
    assert not _grpc_polling.verified("1.8.5")
    (tmp_path / "_grpcio_metadata.py").write_text('__version__ = """1.85.1"""\n')
    assert _grpc_polling.grpcio_version(str(tmp_path)) == "1.85.1"
    assert _grpc_polling.grpcio_version(str(tmp_path / "missing")) is None
