"""The orchestration list pages through the backend with its continuation tokens, never reading the whole hub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dtscale_emulator.dashboard import listing, views
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client
from durabletask._client import requests as rq
from durabletask._client.async_client import AsyncTaskHubGrpcClient


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


def pages(address: str, flt: views.ListFilter, asked: list[int | None]) -> list[list[str]]:
    """Walks every page as the browser does (each page from the previous page's token), recording the sizes asked."""
    original = rq.build_query_instances_request

    def recording(query: Any, token: str | None = None) -> rq.RpcRequest:
        asked.append(query.max_instance_count)
        return original(query, token)

    async def walk() -> list[list[str]]:
        found: list[list[str]] = []
        c = AsyncTaskHubGrpcClient(host_address=address)
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

    rq.build_query_instances_request = recording  # type: ignore[assignment]
    try:
        return aio_loop.run(walk())
    finally:
        rq.build_query_instances_request = original  # type: ignore[assignment]


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
        c = AsyncTaskHubGrpcClient(host_address=address)
        try:
            states, capped = await listing.fetch_all(c, views.ListFilter(name="odd"))
            return len(states), capped
        finally:
            await c.close()

    assert aio_loop.run(count()) == (30, False)
