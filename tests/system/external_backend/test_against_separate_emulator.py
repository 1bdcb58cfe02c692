"""The external-backend switch, tested end to end: every scenario that can, against a separately started emulator.

The emulator runs as its own process (``durabletask-emulator``) with a bearer token and TLS from a private CA, as
a managed scheduler would require them, and nested pytest runs reach it only through ``--backend``. Those runs
must pass, and their summaries must show that the large selection ran there rather than on an in-process emulator.
Three nested runs share the emulator at once, as several teams' suites would share a scheduler: every scenario has a
task hub of its own, and one run's waits on the backend overlap the others' work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.certs import make_tls
from tests.support.external.backend import ROOT
from tests.support.external.plugin import SUITES as FOLDERS
from tests.support.external.plugin import report_nested_run
from tests.support.reliability import free_port, kill

TOKEN = "separate-emulator-token"
# The suites the switch covers, and how many of each suite's tests at least ran against the endpoint when this was
# written (a fresh task hub per scenario, so every test that does not steer our emulator): fewer means tests were
# lost to the switch.
MINIMUM_RAN = {"e2e": 61, "interop": 41, "samples": 11, "recovery": 6}
# The e2e tests of the command line, which start a process per command: a run of their own.
CLI_TESTS = ("test_cli.py", "test_cli_*.py")
# What each nested run collects, about even in length; together, every test of the suites, each once. A run mostly
# waits on the emulator and its subprocesses (about a third of a core busy), so four at once share two cores well.
RUNS = {
    "e2e": [FOLDERS["e2e"], *(f"--ignore-glob={FOLDERS['e2e']}/{pattern}" for pattern in CLI_TESTS)],
    "e2e-cli": sorted(
        str(path.relative_to(ROOT)) for pattern in CLI_TESTS for path in (ROOT / FOLDERS["e2e"]).glob(pattern)
    ),
    "interop": [FOLDERS["interop"]],
    "samples-recovery": [FOLDERS["samples"], FOLDERS["recovery"]],
}


@dataclass(frozen=True)
class Separate:
    url: str
    ca: Path


@pytest.fixture(scope="module")
def separate_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Separate]:
    folder = tmp_path_factory.mktemp("separate")
    tls = make_tls(folder / "tls")
    token_file = folder / "token"
    token_file.write_text(TOKEN)
    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("durabletask-emulator")),
            "--port",
            str(port),
            "--in-memory",
            "--auth-token-file",
            str(token_file),
            "--tls-cert",
            str(tls.cert),
            "--tls-key",
            str(tls.key),
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=folder,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on" in line, f"the separate emulator did not start: {line!r}"
    try:
        yield Separate(f"https://localhost:{port}", tls.ca)
    finally:
        kill(proc, 15)


@dataclass
class NestedRun:
    name: str
    proc: subprocess.Popen[str]
    output: Path
    summary: Path

    @property
    def stdout(self) -> str:
        return self.output.read_text()


def _start(name: str, selection: list[str], separate: Separate, folder: Path) -> NestedRun:
    output, summary = folder / f"{name}.out", folder / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTS_TEST_")}
    env["DTS_TEST_TOKEN"] = TOKEN
    # gRPC's own variable: the private CA becomes the trusted roots of every process, ours and the peer's.
    env["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(separate.ca)
    args = [
        sys.executable,
        "-m",
        "pytest",
        *selection,
        "--backend",
        separate.url,
        "-q",
        "-p",
        "no:cacheprovider",
        "--external-summary",
        str(summary),
    ]
    # A file, not a pipe: nobody reads until the run ends, and a full pipe would stall it.
    with output.open("w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    return NestedRun(name, proc, output, summary)


def _check(run: NestedRun, url: str, request: pytest.FixtureRequest) -> dict[str, Counter[str]]:
    stdout = run.stdout
    tail = stdout[-6000:]
    section = tail[tail.find("= external backend ="):]
    report_nested_run(request.config, [line for line in section.splitlines()[1:] if not line.startswith("=")])
    # The summary's skip lines can push the failures out of the tail: name the failed tests first.
    failed = "\n".join(line for line in stdout.splitlines() if line.startswith(("FAILED ", "ERROR ")))
    assert run.proc.returncode == 0, f"the run {run.name!r} against the separate emulator failed:\n{failed}\n{tail}"
    summary = json.loads(run.summary.read_text())
    assert summary["endpoint"] == url
    assert summary["totals"].get("failed", 0) == summary["totals"].get("error", 0) == 0
    assert f"external backend: {summary['ran']} ran" in stdout
    return {suite: Counter(counts) for suite, counts in summary["suites"].items()}


@pytest.mark.emulator_internals("starts an emulator of its own and runs the suites against it")
@pytest.mark.timeout(1200)
def test_the_scenario_suites_pass_against_a_separate_emulator_with_token_and_tls(
    separate_emulator: Separate, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    runs = [_start(name, selection, separate_emulator, tmp_path) for name, selection in RUNS.items()]
    try:
        for run in runs:
            run.proc.wait(timeout=1150)
    finally:
        for run in runs:
            if run.proc.poll() is None:
                kill(run.proc)
    per_suite: dict[str, Counter[str]] = {suite: Counter() for suite in MINIMUM_RAN}
    for run in runs:
        for suite, counts in _check(run, separate_emulator.url, request).items():
            per_suite[suite] += counts
    for suite, minimum in MINIMUM_RAN.items():
        assert per_suite[suite]["passed"] >= minimum, per_suite
