#!/usr/bin/env python3
"""Renders the README's dashboard screenshots (docs/img/dashboard-*.png) from a real emulator and worker.

    python3 dev.py run python docs/screenshots.py

Uses Debian's Chromium (/usr/bin/chromium) through Playwright, the same way the browser tests do.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.integration.dashboard.conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402
from tests.integration.dashboard.scenario import populate, running  # noqa: E402

OUT = ROOT / "docs" / "img"


def main() -> int:
    executable = chromium_path()
    if executable is None:
        print("no Chromium found: apt-get install -y chromium", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with running() as scenario, sync_playwright() as pw:
        populate(scenario.client, extra=12)
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 760})
        page.goto(f"{scenario.url}hubs/default/orchestrations")
        page.get_by_role("table", name="Orchestrations").wait_for()
        page.screenshot(path=str(OUT / "dashboard-list.png"))
        page.goto(f"{scenario.url}hubs/default/instances/retry-5")
        timeline = page.locator("section", has=page.get_by_role("heading", name="Timeline"))
        timeline.wait_for()
        page.set_viewport_size({"width": 1280, "height": 900})
        page.locator("header").screenshot(path=str(OUT / "_header.png"))  # warms up fonts before the real shot
        (OUT / "_header.png").unlink()
        timeline.scroll_into_view_if_needed()
        timeline.screenshot(path=str(OUT / "dashboard-timeline.png"))
        browser.close()
    print(f"wrote {OUT / 'dashboard-list.png'} and {OUT / 'dashboard-timeline.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
