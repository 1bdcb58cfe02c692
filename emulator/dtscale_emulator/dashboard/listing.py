"""The orchestration and entity lists read from the backend one page at a time, with its continuation tokens.

A page costs a query of at most one page of rows, however many instances the hub holds: the page's URL carries
the token the backend gave for where it starts. Name and tag are not in the protocol's query, so with either
set the page keeps asking for as many rows as it still needs until it is full, and stops after
:data:`SCAN_LIMIT` rows so a rare name in a huge hub cannot make one page read the whole hub (the page then says
so and the next page carries on from there).
"""

from __future__ import annotations

from dataclasses import dataclass

from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.dashboard.models import EntityRow, InstanceRow, entity_row, instance_row, status_number
from dtscale_emulator.dashboard.views import ListFilter

#: Rows one list page reads at most while name or tag filters skip rows.
SCAN_LIMIT = 2000
#: Rows a bulk action reads per backend page, and the most instances it acts on at once.
BULK_PAGE = 500
MAX_BULK = 10_000


@dataclass
class ListPage:
    items: list[InstanceRow]
    next_token: str | None  # where the next page starts; None: this is the last page
    scanned: int  # rows the backend returned for this page
    stopped: bool  # the scan limit ended the page before it was full


async def query_page(
    client: EndpointClient, flt: ListFilter, size: int, token: str | None
) -> tuple[list[InstanceRow], str | None]:
    """One ``QueryInstances`` call of ``size`` rows for the filters the protocol takes, and the next token."""
    states, next_token = await client.query_instances(
        statuses=[status_number(s) for s in flt.statuses],
        created_from=flt.created_from,
        created_to=flt.created_to,
        prefix=flt.prefix or None,
        size=size,
        token=token,
    )
    return [instance_row(s) for s in states], next_token


async def fetch_page(client: EndpointClient, flt: ListFilter) -> ListPage:
    """The list page that starts at ``flt.cursor``, filtered as the URL says."""
    items: list[InstanceRow] = []
    token = flt.cursor
    scanned = 0
    while True:
        rows, token = await query_page(client, flt, flt.page_size - len(items), token)
        scanned += len(rows)
        items.extend(r for r in rows if flt.matches_locally(r))
        if token is None or len(items) >= flt.page_size:
            return ListPage(items, token, scanned, stopped=False)
        if scanned >= SCAN_LIMIT:
            return ListPage(items, token, scanned, stopped=True)


async def fetch_all(client: EndpointClient, flt: ListFilter) -> tuple[list[InstanceRow], bool]:
    """Every instance the filters select (for bulk actions), up to :data:`MAX_BULK`; whether that cap cut it."""
    found: list[InstanceRow] = []
    token: str | None = None
    while True:
        rows, token = await query_page(client, flt, BULK_PAGE, token)
        found.extend(r for r in rows if flt.matches_locally(r))
        if len(found) > MAX_BULK:
            return found[:MAX_BULK], True
        if token is None:
            return found, False


async def entity_page(
    client: EndpointClient, prefix: str | None, cursor: str | None, size: int
) -> tuple[list[EntityRow], str | None]:
    """One page of the entity list (without states) from ``cursor``, and where the next page starts."""
    found, token = await client.query_entities(prefix=prefix, include_state=False, size=size, token=cursor)
    return [entity_row(e, include_state=False) for e in found], token
