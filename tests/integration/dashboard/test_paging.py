"""The orchestration list pages through the backend with its continuation tokens, never reading the whole hub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dtscale_emulator.dashboard import listing, views
from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    server = EmulatorServer(port=0, in_memory=True).start()
    c = client.TaskHubGrpcClient(host_address=server.address)
    try:
        for n in range(60):  # nobody runs them: all stay PENDING, half named "even"
            c.schedule_new_orchestration("even" if n % 2 == 0 else "odd", instance_id=f"p-{n:03d}")
        yield server.address
    finally:
        c.close()
        server.close()


class Recording(EndpointClient):
    """An endpoint client that records the page size of every ``QueryInstances`` call."""

    def __init__(self, address: str, asked: list[int | None]) -> None:
        super().__init__(address, "default")
        self.asked = asked

    async def query_instances(self, *, size: int, **query: Any) -> Any:
        self.asked.append(size)
        return await super().query_instances(size=size, **query)


def pages(address: str, flt: views.ListFilter, asked: list[int | None]) -> list[list[str]]:
    """Walks every page as the browser does (each page from the previous page's token), recording the sizes asked."""

    async def walk() -> list[list[str]]:
        found: list[list[str]] = []
        c = Recording(address, asked)
        try:
            cursor = None
            while True:
                page = await listing.fetch_page(c, views.ListFilter(**{**vars(flt), "cursor": cursor}))
                found.append([s.instance_id for s in page.items])
                if page.next_token is None:
                    return found
                cursor = page.next_token
        finally:
            await c.close()

    return aio_loop.run(walk())


def test_each_page_asks_the_backend_for_one_page_only(address: str) -> None:
    asked: list[int | None] = []
    found = pages(address, views.ListFilter(prefix="p-", page_size=25), asked)
    assert [len(p) for p in found] == [25, 25, 10]
    assert found[0][0] == "p-000" and found[2][-1] == "p-059"
    assert asked == [25, 25, 25]  # one call per page, for that page's rows


def test_a_local_name_filter_fills_pages_from_the_following_rows(address: str) -> None:
    asked: list[int | None] = []
    found = pages(address, views.ListFilter(name="even", page_size=10), asked)
    # The third page ends on the last "even" but the backend has rows after it: a fourth page looks, finds none.
    assert [len(p) for p in found] == [10, 10, 10, 0]
    assert found[1][0] == "p-020" and all(int(i[2:]) % 2 == 0 for p in found for i in p)
    assert max(a or 0 for a in asked) <= 10


def test_a_rare_name_stops_the_page_at_the_scan_limit(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SCAN_LIMIT", 20)
    asked: list[int | None] = []
    found = pages(address, views.ListFilter(name="nothing-has-this-name", page_size=10), asked)
    assert found == [[], [], []]  # three pages of 20 rows looked at, none matching
    assert sum(a or 0 for a in asked) <= 60 + 30


def test_bulk_reads_every_page(address: str) -> None:
    async def count() -> tuple[int, bool]:
        c = EndpointClient(address, "default")
        try:
            states, capped = await listing.fetch_all(c, views.ListFilter(name="odd"))
            return len(states), capped
        finally:
            await c.close()

    assert aio_loop.run(count()) == (30, False)
