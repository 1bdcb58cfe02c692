"""The orchestration and entity lists read from the backend one page at a time, with its continuation tokens.

A page costs a query of at most one page of rows, however many instances the hub holds: the page's URL carries
the token the backend gave for where it starts. Name and tag are not in the protocol's query, so with either
set the page keeps asking for as many rows as it still needs until it is full, and stops after
:data:`SCAN_LIMIT` rows so a rare name in a huge hub cannot make one page read the whole hub (the page then says
so and the next page carries on from there).
"""

from __future__ import annotations

from dataclasses import dataclass

from dtscale_emulator.dashboard.views import ListFilter
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client.async_client import AsyncTaskHubGrpcClient
from durabletask._client.models import EntityQuery, OrchestrationQuery, OrchestrationState, OrchestrationStatus
from durabletask.entities import EntityMetadata

#: Rows one list page reads at most while name or tag filters skip rows.
SCAN_LIMIT = 2000
#: Rows a bulk action reads per backend page, and the most instances it acts on at once.
BULK_PAGE = 500
MAX_BULK = 10_000


@dataclass
class ListPage:
    items: list[OrchestrationState]
    next_token: str | None  # where the next page starts; None: this is the last page
    scanned: int  # rows the backend returned for this page
    stopped: bool  # the scan limit ended the page before it was full


def _query(flt: ListFilter, size: int) -> OrchestrationQuery:
    return OrchestrationQuery(
        created_time_from=flt.created_from,
        created_time_to=flt.created_to,
        runtime_status=[OrchestrationStatus[s] for s in flt.statuses] or None,
        max_instance_count=size,
        instance_id_prefix=flt.prefix or None,
    )


def _one_page(
    client: AsyncTaskHubGrpcClient, query: OrchestrationQuery, token: str | None
) -> ops.Operation[tuple[list[OrchestrationState], str | None]]:
    response = yield rq.build_query_instances_request(query, token)
    return rq.parse_query_instances_response(response, client._settings.converter, token)


async def query_page(
    client: AsyncTaskHubGrpcClient, query: OrchestrationQuery, token: str | None
) -> tuple[list[OrchestrationState], str | None]:
    """One ``QueryInstances`` call: a page of states and the token of the next (``None``: no more)."""
    return await client._run(_one_page(client, query, token))


async def fetch_page(client: AsyncTaskHubGrpcClient, flt: ListFilter) -> ListPage:
    """The list page that starts at ``flt.cursor``, filtered as the URL says."""
    items: list[OrchestrationState] = []
    token = flt.cursor
    scanned = 0
    while True:
        states, token = await query_page(client, _query(flt, flt.page_size - len(items)), token)
        scanned += len(states)
        items.extend(s for s in states if flt.matches_locally(s))
        if token is None or len(items) >= flt.page_size:
            return ListPage(items, token, scanned, stopped=False)
        if scanned >= SCAN_LIMIT:
            return ListPage(items, token, scanned, stopped=True)


async def fetch_all(client: AsyncTaskHubGrpcClient, flt: ListFilter) -> tuple[list[OrchestrationState], bool]:
    """Every instance the filters select (for bulk actions), up to :data:`MAX_BULK`; whether that cap cut it."""
    found: list[OrchestrationState] = []
    token: str | None = None
    while True:
        states, token = await query_page(client, _query(flt, BULK_PAGE), token)
        found.extend(s for s in states if flt.matches_locally(s))
        if len(found) > MAX_BULK:
            return found[:MAX_BULK], True
        if token is None:
            return found, False


def _one_entity_page(
    client: AsyncTaskHubGrpcClient, query: EntityQuery, token: str | None
) -> ops.Operation[tuple[list[EntityMetadata], str | None]]:
    response = yield rq.build_query_entities_request(query, token)
    return rq.parse_query_entities_response(response, query.include_state, client._settings.converter, token)


async def entity_page(
    client: AsyncTaskHubGrpcClient, prefix: str | None, cursor: str | None, size: int
) -> tuple[list[EntityMetadata], str | None]:
    """One page of the entity list (without states) from ``cursor``, and where the next page starts."""
    query = EntityQuery(instance_id_starts_with=prefix, include_state=False, page_size=size)
    return await client._run(_one_entity_page(client, query, cursor))
