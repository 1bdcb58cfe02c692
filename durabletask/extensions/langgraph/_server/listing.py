"""A search route's page, as the assistants' and the crons' search bodies ask for it: ``limit``, ``offset``,
``sort_by``, ``sort_order`` and ``select``, read before the records are, and the answer built from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import store_requests as body_of


def window(body: dict[str, Any]) -> tuple[int, int]:
    """The body's ``limit`` (1 to ``PAGE_MAX``, default 10) and ``offset`` (default 0)."""
    limit = body_of.integer(body, "limit", default=10, minimum=1, maximum=body_of.PAGE_MAX)
    offset = body_of.integer(body, "offset", default=0, minimum=0, maximum=body_of.OFFSET_MAX)
    return limit, offset


@dataclass(frozen=True)
class SearchPage:
    """What a search body asks of its answer (422 naming the field for a wrong one)."""

    limit: int
    offset: int
    sort_by: str
    sort_order: str
    select: list[str] | None

    @classmethod
    def read(cls, body: dict[str, Any], sort_fields: Sequence[str], select_fields: Sequence[str]) -> SearchPage:
        """The page ``body`` asks for, sorted by one of ``sort_fields`` (default ``created_at``, newest first)
        and showing the ``select_fields`` it selects (all when it selects none)."""
        limit, offset = window(body)
        sort_by = str(body_of.choice(body, "sort_by", sort_fields, default="created_at"))
        order = str(body_of.choice(body, "sort_order", ("asc", "desc"), default="desc"))
        return cls(limit, offset, sort_by, order, body_of.select(body, select_fields))

    def answer(self, records: list[dict[str, Any]], tiebreak: str) -> web.Response:
        """The page of ``records`` (ties broken by ``tiebreak``), with ``X-Pagination-Next`` when more follow."""
        found = body_of.sort_records(records, self.sort_by, self.sort_order, tiebreak)
        shown, following = body_of.page(found, limit=self.limit, offset=self.offset)
        if self.select is not None:
            shown = [{name: record.get(name) for name in self.select} for record in shown]
        headers = {"X-Pagination-Next": str(following)} if following is not None else None
        return body_of.json_response(shown, headers=headers)
