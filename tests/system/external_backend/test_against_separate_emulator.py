"""The external-backend switch, tested end to end: every scenario that can, against a separately started emulator.

The emulator runs as its own process (``durabletask-emulator``) with a bearer token and TLS from a private CA, as
a managed scheduler would require them, and a nested pytest run reaches it only through ``--backend``. That run
must pass, and its summary must show that the large selection ran there rather than on an in-process emulator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
SUITES = [FOLDERS[suite] for suite in MINIMUM_RAN]


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


@pytest.mark.emulator_internals("starts an emulator of its own and runs the suites against it")
@pytest.mark.timeout(1200)
def test_the_scenario_suites_pass_against_a_separate_emulator_with_token_and_tls(
    separate_emulator: Separate, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    summary_file = tmp_path / "summary.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTS_TEST_")}
    env["DTS_TEST_TOKEN"] = TOKEN
    # gRPC's own variable: the private CA becomes the trusted roots of every process, ours and the peer's.
    env["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(separate_emulator.ca)
    args = [
        sys.executable,
        "-m",
        "pytest",
        *SUITES,
        "--backend",
        separate_emulator.url,
        "-q",
        "-p",
        "no:cacheprovider",
        "--external-summary",
        str(summary_file),
    ]
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1150)
    tail = proc.stdout[-6000:]
    section = tail[tail.find("= external backend ="):]
    report_nested_run(request.config, [line for line in section.splitlines()[1:] if not line.startswith("=")])
    # The summary's skip lines can push the failures out of the tail: name the failed tests first.
    failed = "\n".join(line for line in proc.stdout.splitlines() if line.startswith(("FAILED ", "ERROR ")))
    assert proc.returncode == 0, (
        f"the run against the separate emulator failed:\n{failed}\n{tail}\n{proc.stderr[-3000:]}"
    )
    summary = json.loads(summary_file.read_text())
    assert summary["endpoint"] == separate_emulator.url
    assert summary["totals"].get("failed", 0) == summary["totals"].get("error", 0) == 0
    for suite, minimum in MINIMUM_RAN.items():
        assert summary["suites"][suite].get("passed", 0) >= minimum, summary
    assert f"external backend: {summary['ran']} ran" in proc.stdout
