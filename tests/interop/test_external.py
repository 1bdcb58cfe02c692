"""Every interop scenario against an external backend (``--backend``), with Microsoft's SDK and with ours.

Both run their DurableTaskScheduler client and worker, in subprocesses, with the credential and TLS the run asks
for. The expected result is the one our emulator gives (test_conformance.py), so a scenario that fails here shows
where the external backend, e.g. the public DTS emulator or managed DTS, and our emulator differ.
Without an external backend there is nothing to run (the parameter sets are empty).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.external.backend import TaskHubs, new_taskhub_name
from tests.support.external.plugin import taskhubs

from .conftest import ROOT, Batch, background_batch, our_env, peer_env
from .test_conformance import EXPECTED, OFFICIAL_ON_OURS, OURS, expected

pytestmark = pytest.mark.interop

# Scenarios that purge by filter, list or clean the whole task hub: only where nobody else uses the hub.
WHOLE_HUB = {
    "purge": "purges every completed instance created since it started",
    "query": "pages through every completed instance of the hub",
    "entity_admin": "cleans the storage of every entity in the hub",
}
# Two batches of every scenario, one after the other on a shared hub, on a loaded machine or a remote service.
BATCH_TIMEOUT = 600


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "external_scenario" in metafunc.fixturenames:
        hubs = taskhubs(metafunc.config)
        names = list(EXPECTED) if hubs is not None else []
        params = []
        for name in names:
            marks = []
            if name in WHOLE_HUB and hubs is not None and not hubs.whole_hub_allowed:
                reason = f"needs a task hub nobody else uses ({hubs.declined}): {WHOLE_HUB[name]}"
                marks.append(pytest.mark.skip(reason=reason))
            params.append(pytest.param(name, marks=marks, id=name))
        metafunc.parametrize("external_scenario", params)


def _runnable(hubs: TaskHubs) -> list[str]:
    return [name for name in EXPECTED if hubs.whole_hub_allowed or name not in WHOLE_HUB]


SDKS = ("ours", "official")


@pytest.fixture(scope="module")
def external_hubs(request: pytest.FixtureRequest) -> Iterator[tuple[TaskHubs, dict[str, str]]]:
    """The task hub argument for each SDK's driver: where the backend creates them, one fresh hub per scenario
    and SDK, so the two batches run at once without meeting; otherwise the shared hub, in turns."""
    hubs = taskhubs(request.config)
    assert hubs is not None
    if not hubs.fresh:
        yield hubs, dict.fromkeys(SDKS, hubs.backend.taskhub)
        return
    made: list[str] = []
    prefixes = {sdk: new_taskhub_name() for sdk in SDKS}
    try:
        for prefix in prefixes.values():
            made.extend(hubs.open_named(f"{prefix}{name}") for name in _runnable(hubs))
        yield hubs, {sdk: f"{prefix}{{scenario}}" for sdk, prefix in prefixes.items()}
    finally:
        for name in made:
            hubs.release(name)


@pytest.fixture(scope="module")
def ours_external(
    external_hubs: tuple[TaskHubs, dict[str, str]], request: pytest.FixtureRequest
) -> Iterator[Batch]:
    hubs, taskhubs_of = external_hubs
    with background_batch(
        sys.executable, our_env(), str(ROOT), "dts", hubs.backend.endpoint, _runnable(hubs), taskhubs_of["ours"],
        BATCH_TIMEOUT,
    ) as batch:
        if hubs.fresh:  # hubs of its own: Microsoft's batch runs beside ours rather than after it
            request.getfixturevalue("official_external")
        yield batch


@pytest.fixture(scope="module")
def official_external(
    peer_py: Path, external_hubs: tuple[TaskHubs, dict[str, str]], request: pytest.FixtureRequest
) -> Iterator[Batch]:
    hubs, taskhubs_of = external_hubs
    if not hubs.fresh:
        ours: Batch = request.getfixturevalue("ours_external")
        ours.finish()  # one hub for both: the batches take turns, as whole-hub scenarios need
    with background_batch(
        peer_py, peer_env(), "/", "dts", hubs.backend.endpoint, _runnable(hubs), taskhubs_of["official"],
        BATCH_TIMEOUT,
    ) as batch:
        yield batch


@pytest.mark.timeout(BATCH_TIMEOUT * 2)
def test_our_sdk_on_external_backend(external_scenario: str, ours_external: Batch) -> None:
    assert ours_external.result(external_scenario) == expected(OURS, external_scenario)


@pytest.mark.timeout(BATCH_TIMEOUT * 2)
def test_official_sdk_on_external_backend(external_scenario: str, official_external: Batch) -> None:
    assert official_external.result(external_scenario) == expected(OFFICIAL_ON_OURS, external_scenario)
