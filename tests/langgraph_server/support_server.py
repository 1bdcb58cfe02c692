"""What the server's acceptance tests share: LangChain's SDK sources (with its integration suite), a running
``durabletask langgraph`` process, a private network namespace, and the suite's run read back from its JUnit report.

Run as a module (``python -m tests.langgraph_server.support_server suite ...``) it is the driver of one suite run:
it starts ``durabletask langgraph dev`` on the suite's ``langgraph.json``, runs the suite unmodified against it and
stops the server. The test runs that driver inside a network namespace of its own when port 2024 is taken, since
the suite's ``test_remote_graph_v3.py`` hard-codes ``localhost:2024``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "langgraph-server"
SDK_VERSION = "0.4.14"
SUITE_PORT = 2024  # test_remote_graph_v3.py's URL
START_TIMEOUT = 180.0  # a bound on start-up on a loaded machine, never an assertion about speed


class RegistryUnreachableError(Exception):
    """The package registry could not be reached (or would not serve the distribution)."""


def sdk_source(cache: Path = CACHE) -> Path:
    """The unpacked source distribution of ``langgraph-sdk`` 0.4.14, downloaded once into ``.cache/``."""
    target = cache / f"langgraph_sdk-{SDK_VERSION}"
    if (target / "tests" / "integration").is_dir() and (target / "integration" / "langgraph.json").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="download-") as scratch:
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "--timeout",
                "30",
                "--retries",
                "1",
                "-d",
                scratch,
                f"langgraph-sdk=={SDK_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        archives = sorted(Path(scratch).glob("langgraph_sdk-*.tar.gz"))
        if got.returncode != 0 or not archives:
            lines = (got.stderr or got.stdout).strip().splitlines()
            raise RegistryUnreachableError(lines[-1] if lines else f"pip download exited {got.returncode}")
        with tarfile.open(archives[0]) as archive:
            archive.extractall(scratch, filter="data")
        unpacked = Path(scratch, f"langgraph_sdk-{SDK_VERSION}")
        if not target.exists():
            unpacked.rename(target)
    return target


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether nothing listens on ``host:port`` (so a server of ours may bind it)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing listens on now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def in_private_network(command: Sequence[str]) -> list[str]:
    """``command`` run in a new user and network namespace whose only interface is a loopback brought up."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip") or "/usr/sbin/ip"
    if unshare is None:
        raise RuntimeError("port 2024 is taken and `unshare` (util-linux) is missing: cannot run the suite privately")
    return [
        unshare,
        "--user",
        "--map-root-user",
        "--net",
        "sh",
        "-c",
        f'{ip} link set lo up && exec "$@"',
        "sh",
        *command,
    ]


def cli(*args: str) -> list[str]:
    """The ``durabletask`` command line of this environment, with ``args``."""
    return [sys.executable, "-m", "durabletask.cli", *args]


class ServerProcess:
    """A ``durabletask langgraph ...`` process (or any command), its output in ``log``; ready once ``url``/ok answers.

    Args:
        command: The command line.
        url: The base URL of its HTTP API, or ``None`` for a process that serves none (a worker).
        log: Where its standard output and error go.
        cwd: Its working folder.
        env: Extra environment variables.
    """

    def __init__(
        self,
        command: Sequence[str],
        url: str | None,
        log: Path,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command, self.url, self.log, self.cwd = list(command), url, log, cwd
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        if self.url is not None:
            try:
                self._wait_ready(self.url)
            except BaseException:
                self.stop()  # never leave a process behind that did not come up
                raise
        return self

    def _wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{self.command[3:]} exited {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # it answers (a server behind --auth-token refuses /ok without the token)
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{url}/ok did not answer within {START_TIMEOUT:.0f}s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        """The last lines of the process's output."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"

    def kill(self) -> None:
        """SIGKILL, at once (a crash)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, then SIGKILL if it has not ended within ``grace`` seconds."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def dev_server(config: Path, port: int, log: Path, *extra: str) -> ServerProcess:
    """``durabletask langgraph dev`` on ``config``, listening on 127.0.0.1:``port``."""
    command = cli("langgraph", "dev", "--config", str(config), "--host", "127.0.0.1", "--port", str(port), *extra)
    return ServerProcess(command, f"http://127.0.0.1:{port}", log, cwd=config.parent)


@dataclass
class SuiteOutcome:
    """The counts of one run of the suite, and each test that did not pass with the first lines of its error."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (test, kind, message)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped

    def summary(self) -> str:
        head = f"{self.passed} passed, {self.failed} failed, {self.errors} errors, {self.skipped} skipped"
        return "\n".join([head, *(f"  {kind}: {test}: {message}" for test, kind, message in self.problems)])


def read_junit(report: Path) -> SuiteOutcome:
    """The outcome recorded in a JUnit XML report written by pytest's ``--junitxml``."""
    outcome = SuiteOutcome()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        problem = next((child for child in case if child.tag in {"failure", "error", "skipped"}), None)
        if problem is None:
            outcome.passed += 1
            continue
        kind = {"failure": "failed", "error": "errors", "skipped": "skipped"}[problem.tag]
        setattr(outcome, kind, getattr(outcome, kind) + 1)
        message = " ".join((problem.get("message") or problem.text or "").split())[:300]
        outcome.problems.append((test, kind, message))
    return outcome


def run_suite(sdk: Path, project: Path, junit: Path, log: Path, per_test_timeout: int) -> int:
    """Serves ``project``'s ``langgraph.json`` with ``durabletask langgraph dev`` on port 2024 and runs the suite."""
    with dev_server(project / "langgraph.json", SUITE_PORT, log):
        env = {
            **os.environ,
            "LANGGRAPH_INTEGRATION_URL": f"http://localhost:{SUITE_PORT}",
            # The client under test is the one of the source distribution, beside its suite.
            "PYTHONPATH": os.pathsep.join([str(sdk), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        }
        suite = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-m",
                "integration",
                "tests/integration",
                "-p",
                "no:cacheprovider",
                f"--junitxml={junit}",
                f"--timeout={per_test_timeout}",
            ],
            cwd=sdk,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    return suite.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="support_server")
    commands = parser.add_subparsers(dest="command", required=True)
    suite = commands.add_parser("suite", help="serve the suite's project and run LangChain's suite against it")
    suite.add_argument("--sdk", type=Path, required=True)
    suite.add_argument("--project", type=Path, required=True)
    suite.add_argument("--junit", type=Path, required=True)
    suite.add_argument("--log", type=Path, required=True)
    suite.add_argument("--per-test-timeout", type=int, default=90)
    args = parser.parse_args(argv)
    return run_suite(args.sdk, args.project, args.junit, args.log, args.per_test_timeout)


if __name__ == "__main__":
    raise SystemExit(main())
