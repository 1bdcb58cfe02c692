"""Browser harness: one headless Chromium for these tests (Debian's /usr/bin/chromium, driven by Playwright).

No browser is ever downloaded. Outside CI a missing browser skips the browser tests with the reason printed;
with CI=true it fails them. A failing test leaves a screenshot in tests/integration/dashboard/artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.dashboard.scenario import Scenario, populate, running

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    print(f"\nskipping browser tests: {reason}")
    pytest.skip(reason)


# One browser for the dashboard's tests, closed when they end: Playwright's synchronous API keeps an event loop
# marked running on the main thread while it is open, which would break later tests that call asyncio.run().
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (it is in the 'dev' extra)")
    executable = chromium_path()
    if executable is None:
        _unavailable("no Chromium found (apt-get install -y chromium)")
    with sync_playwright() as pw:
        try:
            found = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as error:
            _unavailable(f"Chromium at {executable} did not start: {error}")
        yield found
        found.close()


@pytest.fixture(scope="module")
def scenario() -> Iterator[Scenario]:
    with running() as s:
        populate(s.client)
        yield s


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    found = context.new_page()
    yield found
    if request.node.stash.get(_FAILED, False):
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{request.node.name}.png"
        found.screenshot(path=str(path), full_page=True)
        print(f"screenshot of the failure: {path}")
    context.close()
