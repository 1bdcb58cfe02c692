"""The switch that points the scenario suites at an external DTS endpoint, and the summary of such a run.

Without ``--backend``/``--connection-string`` (or their ``DTS_TEST_*`` variables) nothing changes: every suite
runs on our emulator. With one, the e2e, interop, sample and recovery scenarios talk to that endpoint. Skipped
there: tests marked ``emulator_internals`` (they steer our emulator: faults, clock, crashes, storage,
counters) or ``local_only`` (they use no backend, or only ones the suite starts), and, where others may use
the task hub, tests marked ``whole_taskhub`` (they list, purge or clean a whole hub). The terminal summary says
what ran against the endpoint.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.external.backend import TASKHUB_MODES, Backend, TaskHubs

#: The suites whose scenarios run against an external backend, and their folders (dev.py passes the same ones).
SUITES = {
    "e2e": "tests/e2e",
    "interop": "tests/interop",
    "recovery": "tests/system/recovery",
    "samples": "tests/system/samples",
}
INTERNALS = "emulator_internals"
WHOLE_TASKHUB = "whole_taskhub"
LOCAL_ONLY = "local_only"
_backend_key = pytest.StashKey["Backend | None"]()
_hubs_key = pytest.StashKey["TaskHubs | None"]()
_nested_key = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("external backend")
    group.addoption(
        "--backend",
        default=None,
        help="run the scenario suites against this DTS endpoint "
        "(http://host:port, https://..., a bare host:port is plaintext; env DTS_TEST_BACKEND); "
        "--endpoint is the same",
    )
    group.addoption(
        "--connection-string",
        default=None,
        help="a DTS connection string instead of --backend (env DTS_TEST_CONNECTION_STRING)",
    )
    group.addoption(
        "--taskhub-mode",
        default=None,
        choices=TASKHUB_MODES,
        help="fresh task hub per scenario, "
        "the one hub exclusively, or shared with others (env DTS_TEST_TASKHUB_MODE; default auto)",
    )
    group.addoption("--external-summary", default=None, help="also write the external run's summary as JSON here")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{INTERNALS}(why): needs control of our emulator's internals; skipped against an external backend"
    )
    config.addinivalue_line(
        "markers", f"{LOCAL_ONLY}(why): uses no backend, or only ones the suite starts; skipped against an external one"
    )
    config.addinivalue_line(
        "markers",
        f"{WHOLE_TASKHUB}(why): lists, purges or cleans a whole task hub; runs "
        "against an external backend only on a hub nobody else uses",
    )
    backend = Backend.resolve(
        os.environ,
        backend=config.getoption("--backend") or config.getoption("--endpoint", None),
        taskhub=config.getoption("--taskhub", None),
        connection_string=config.getoption("--connection-string"),
        taskhub_mode=config.getoption("--taskhub-mode"),
    )
    config.stash[_backend_key] = backend
    config.stash[_hubs_key] = TaskHubs(backend) if backend is not None else None
    if backend is not None:
        # Child processes (interop peers, worker processes) find the endpoint the same way.
        os.environ.update(backend.environment())


def external_backend(config: pytest.Config) -> Backend | None:
    return config.stash.get(_backend_key, None)


def taskhubs(config: pytest.Config) -> TaskHubs | None:
    return config.stash.get(_hubs_key, None)


def suite_of(nodeid: str) -> str | None:
    return next((suite for suite, folder in SUITES.items() if nodeid.startswith(f"{folder}/")), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    hubs = taskhubs(config)
    if hubs is None:
        return
    for item in items:
        internals = item.get_closest_marker(INTERNALS)
        if internals is not None:
            why = internals.args[0] if internals.args else "steers our emulator"
            item.add_marker(pytest.mark.skip(reason=f"needs our emulator's internals: {why}"))
            continue
        local = item.get_closest_marker(LOCAL_ONLY)
        if local is not None:
            why = local.args[0] if local.args else "uses no backend"
            item.add_marker(pytest.mark.skip(reason=f"not a scenario for an external backend: {why}"))
            continue
        whole = item.get_closest_marker(WHOLE_TASKHUB)
        if whole is not None and suite_of(item.nodeid) is not None and not hubs.whole_hub_allowed:
            why = whole.args[0] if whole.args else "acts on the whole task hub"
            item.add_marker(pytest.mark.skip(reason=f"needs a task hub nobody else uses ({hubs.declined}): {why}"))


def _summary(terminalreporter: Any, backend: Backend, hubs: TaskHubs) -> dict[str, Any]:
    per_suite: dict[str, Counter[str]] = {suite: Counter() for suite in SUITES}
    skipped_why: Counter[str] = Counter()
    for outcome in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(outcome, []):
            suite = suite_of(getattr(report, "nodeid", ""))
            if suite is None:
                continue
            per_suite[suite][outcome] += 1
            if outcome == "skipped" and isinstance(report.longrepr, tuple):
                skipped_why[str(report.longrepr[2]).removeprefix("Skipped: ")] += 1
    totals: Counter[str] = sum(per_suite.values(), Counter())
    return {
        "endpoint": backend.endpoint,
        "taskhubs": "a fresh one per scenario" if hubs.fresh else f"{backend.taskhub!r} ({hubs.declined})",
        "ran": totals["passed"] + totals["failed"] + totals["error"] + totals["xfailed"] + totals["xpassed"],
        "totals": dict(totals),
        "suites": {suite: dict(counts) for suite, counts in per_suite.items() if counts},
        "skipped": dict(skipped_why),
        "left_behind": hubs.left_behind,
    }


def report_nested_run(config: pytest.Config, lines: list[str]) -> None:
    """Lines of a nested external run's summary, to print at the end of this run."""
    config.stash.setdefault(_nested_key, []).extend(lines)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    nested = config.stash.get(_nested_key, [])
    if nested:
        terminalreporter.section("external backend: the separate emulator run")
        for line in nested:
            terminalreporter.write_line(line)
    backend, hubs = external_backend(config), taskhubs(config)
    if backend is None or hubs is None:
        return
    summary = _summary(terminalreporter, backend, hubs)
    write = terminalreporter.write_line
    terminalreporter.section("external backend")
    write(f"endpoint {summary['endpoint']}, task hubs: {summary['taskhubs']}")
    for suite, counts in summary["suites"].items():
        write(f"  {suite:9} " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    for why, n in sorted(summary["skipped"].items()):
        write(f"  skipped {n}: {why}")
    if summary["left_behind"]:
        left = summary["left_behind"]
        write(
            f"  left behind on the shared task hub ({len(left)}, the backend would not purge them by ID): "
            + ", ".join(left[:10])
            + (", ..." if len(left) > 10 else "")
        )
    totals = summary["totals"]
    write(
        f"external backend: {summary['ran']} ran ({totals.get('passed', 0)} passed, "
        f"{totals.get('failed', 0) + totals.get('error', 0)} failed), {totals.get('skipped', 0)} skipped"
    )
    path = config.getoption("--external-summary")
    if path:
        Path(path).write_text(json.dumps(summary, indent=2))
