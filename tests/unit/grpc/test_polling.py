"""The opt-in thread polling of gRPC clients (``durabletask.grpc_options.enable_thread_polling``).

Each case needs an interpreter in which grpc has not been imported yet, so it runs in a fresh one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc

from durabletask import _grpc_polling
from durabletask._grpc_polling import ThreadPolling
from tests.support import grpc_connect_trace
from tests.support.grpc_connect_trace import CONNECT, THREAD_POLLED, TRACE

ROOT = Path(__file__).resolve().parents[3]
listener = grpc_connect_trace.listener  # the fixture, for the tests below
INSTALLED = _grpc_polling.grpcio_version(str(Path(grpc.__file__).parent))
VERIFIED = _grpc_polling.verified(str(INSTALLED))

REPORT = """
import json, os, sys
import grpc
import durabletask._grpc_polling as polling
print(json.dumps({
    "state": polling.state().name,
    "variable": os.environ.get("GRPC_EXPERIMENTS"),
    "loader": type(grpc.__loader__).__name__,
    "finders": [type(f).__name__ for f in sys.meta_path],
}))
"""


def _run(
    code: str, *, env: dict[str, str] | None = None, strict: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter; ``strict``: any warning is an error there."""
    environ = {k: v for k, v in os.environ.items() if k not in {"GRPC_EXPERIMENTS", "GRPC_TRACE", "GRPC_VERBOSITY"}}
    environ["PYTHONPATH"] = str(ROOT)
    environ.update(env or {})
    proc = subprocess.run(
        [sys.executable, *(["-W", "error"] if strict else []), "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def _report(first: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = _run(first + "\n" + REPORT, env=env).stdout.strip().splitlines()[-1]
    found: dict[str, object] = json.loads(out)
    return found


ENABLE = "from durabletask.grpc_options import enable_thread_polling\nresult = enable_thread_polling()"


def test_the_installed_grpcio_is_read_without_importing_it() -> None:
    assert INSTALLED is not None
    assert grpc.__version__ == INSTALLED
    assert _grpc_polling.installed_grpcio() == INSTALLED


def test_importing_the_sdk_requests_nothing() -> None:
    found = _report("import durabletask.client, durabletask.worker")
    assert found["state"] == ThreadPolling.NOT_REQUESTED.name
    assert found["variable"] is None


def test_enabling_before_grpc_is_imported_applies_it_for_grpc_s_import_alone() -> None:
    out = _run(ENABLE + "\nimport sys\nprint(result.name, 'grpc' in sys.modules)").stdout.split()
    if not VERIFIED:
        assert out == [ThreadPolling.UNVERIFIED_GRPC.name, "False"]
        return
    # grpc is imported there and then, with the setting, so nothing imported later can come first.
    assert out == [ThreadPolling.APPLIED.name, "True"]
    found = _report(ENABLE)
    assert found["state"] == ThreadPolling.APPLIED.name
    # The environment is as it was: child processes inherit nothing; grpc keeps its own loader, no finder stays.
    assert found["variable"] is None
    assert found["loader"] == "SourceFileLoader"
    assert found["finders"] == _report("")["finders"]


def test_a_second_call_returns_what_the_first_did() -> None:
    out = _run(ENABLE + "\nprint(result.name, enable_thread_polling().name)").stdout.split()
    assert out[0] == out[1]


def test_a_setting_of_the_environment_is_left_alone_even_an_empty_one() -> None:
    for value in ("", "-event_engine_listener"):
        found = _report(ENABLE, env={"GRPC_EXPERIMENTS": value})
        assert found["state"] == ThreadPolling.CHOSEN_BY_ENVIRONMENT.name
        assert found["variable"] == value


def test_enabling_after_grpc_was_imported_is_too_late_and_says_so() -> None:
    code = "import grpc\n" + ENABLE + "\nprint(result.name)"
    proc = _run(code, strict=False)
    assert proc.stdout.split() == [ThreadPolling.GRPC_ALREADY_IMPORTED.name]
    assert "RuntimeWarning" in proc.stderr
    assert "called after grpc was imported, so it changes nothing" in proc.stderr
    # The warning points at the caller's line, not at the SDK.
    assert proc.stderr.startswith("<string>:3: RuntimeWarning"), proc.stderr


def test_a_grpcio_it_was_not_verified_on_is_left_alone() -> None:
    code = "import durabletask._grpc_polling as p, sys\np.VERIFIED_SERIES = ('0.0.',)\n" + ENABLE
    found = _report(code + "\nassert 'grpc' not in sys.modules")
    assert found["state"] == ThreadPolling.UNVERIFIED_GRPC.name
    assert found["variable"] is None


def test_what_a_call_would_do_in_a_new_program_is_told_without_doing_it() -> None:
    code = (
        "import sys, durabletask._grpc_polling as p\n"
        "print(p.in_a_new_program().name, p.state().name, 'grpc' in sys.modules)"
    )
    expected = ThreadPolling.APPLIED if VERIFIED else ThreadPolling.UNVERIFIED_GRPC
    assert _run(code).stdout.split() == [expected.name, ThreadPolling.NOT_REQUESTED.name, "False"]
    assert _run(code, env={"GRPC_EXPERIMENTS": ""}).stdout.split()[0] == ThreadPolling.CHOSEN_BY_ENVIRONMENT.name
    # Whatever this process imported: the answer is about a program that calls it first.
    assert _run("import grpc\n" + code).stdout.split()[0] == expected.name


def test_the_connection_is_made_by_grpc_s_thread_polled_client_only_when_enabled(listener: int) -> None:
    enabled = _run(ENABLE + "\nimport durabletask.client\n" + CONNECT.format(port=listener), env=TRACE).stderr
    default = _run("import durabletask.client\n" + CONNECT.format(port=listener), env=TRACE).stderr
    assert THREAD_POLLED not in default, default[-2000:]
    if VERIFIED:
        assert THREAD_POLLED in enabled, enabled[-2000:]
    else:  # nothing was changed
        assert THREAD_POLLED not in enabled, enabled[-2000:]


def test_versions(tmp_path: Path) -> None:
    assert _grpc_polling.verified("1.85.3")
    assert not _grpc_polling.verified("1.86.0")
    assert not _grpc_polling.verified("1.8.5")
    (tmp_path / "_grpcio_metadata.py").write_text('__version__ = """1.85.1"""\n')
    assert _grpc_polling.grpcio_version(str(tmp_path)) == "1.85.1"
    assert _grpc_polling.grpcio_version(str(tmp_path / "missing")) is None
