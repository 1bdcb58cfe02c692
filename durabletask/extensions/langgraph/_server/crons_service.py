"""Crons on the SDK's scheduled tasks: each cron is one schedule whose orchestration input is the cron's record.

The schedule entity fires the ``lgs.cron_run`` orchestration at each due time (``crons_worker.py``), which starts
the cron's run through the run service. A disabled cron is a paused schedule; its next run date is the schedule's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server import crons_model as model
from durabletask.extensions.langgraph._server.errors import HttpError, not_found
from durabletask.extensions.langgraph._server.store_requests import now_iso
from durabletask.scheduled import AsyncScheduledTaskClient, ScheduleQuery

_OPERATION_TIMEOUT = 30.0


def _unavailable(what: str) -> HttpError:
    return HttpError(
        503,
        f"{what} was not applied within {_OPERATION_TIMEOUT:.0f} s: is a worker serving this project running "
        "(durabletask langgraph worker, or dev)?",
    )


class Crons:
    """The crons of one task hub.

    Args:
        client: The hub's asyncio client.
    """

    def __init__(self, client: AsyncTaskHubGrpcClient) -> None:
        self._schedules = AsyncScheduledTaskClient(client, operation_timeout=_OPERATION_TIMEOUT)

    async def _apply(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Create (or replace) the cron's schedule from its record, paused when the cron is disabled."""
        options = model.schedule_options(record)
        try:
            handle = await self._schedules.create_schedule(options)
            if not record.get("enabled", True):
                await handle.pause()
            found = await self._schedules.get_schedule(options.schedule_id)
        except TimeoutError:
            raise _unavailable(f"cron '{record['cron_id']}'") from None
        made = model.cron_json(found) if found is not None else None
        if made is None:  # the schedule ended at once (its end_time had passed) and deleted itself
            return {**record, "next_run_date": None}
        return made

    async def create(self, body: Mapping[str, Any], thread_id: str | None, assistant_id: str) -> dict[str, Any]:
        """A new cron from a checked creation body; ``assistant_id`` is the resolved assistant's ID."""
        record = model.new_record(body, thread_id, now_iso())
        record["assistant_id"] = assistant_id
        return await self._apply(record)

    async def get(self, cron_id: str) -> dict[str, Any]:
        """The cron (``Cron``); 404 when there is none."""
        found = await self._schedules.get_schedule(model.schedule_id(model.check_cron_id(cron_id)))
        record = model.cron_json(found) if found is not None else None
        if record is None:
            raise not_found(f"cron '{cron_id}'")
        return record

    async def update(self, cron_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The cron with the update applied (its schedule replaced, so the next run follows the new expression)."""
        current = await self.get(cron_id)
        current.pop("next_run_date", None)
        return await self._apply(model.updated_record(current, body, now_iso()))

    async def delete(self, cron_id: str) -> None:
        """Delete a cron (404 when there is none); runs it already started go on."""
        await self.get(cron_id)
        try:
            await self._schedules.get_schedule_client(model.schedule_id(model.check_cron_id(cron_id))).delete()
        except TimeoutError:
            raise _unavailable(f"deleting cron '{cron_id}'") from None

    async def matching(self, filters: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every cron passing the filters (assistant, thread, enabled, metadata)."""
        found = await self._schedules.list_schedules(ScheduleQuery(schedule_id_prefix=model.SCHEDULE_PREFIX))
        records = (model.cron_json(description) for description in found)
        return [r for r in records if r is not None and model.matches(r, filters)]
