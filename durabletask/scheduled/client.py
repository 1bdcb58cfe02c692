"""Managing schedules from a client: one handle per schedule, and a client to create, find and list them.

Every change is an entity operation run through the operation orchestration, so the caller waits until the
schedule entity has applied it (or refused it). Reads go straight to the entity's state.
"""

from __future__ import annotations

from durabletask.client import AsyncTaskHubGrpcClient, TaskHubGrpcClient
from durabletask.scheduled import _ops, transitions
from durabletask.scheduled.exceptions import ScheduleNotFoundError
from durabletask.scheduled.models import (
    ScheduleCreationOptions,
    ScheduleDescription,
    ScheduleQuery,
    ScheduleState,
    ScheduleUpdateOptions,
)
from durabletask.scheduled.orchestrator import execute_schedule_operation_orchestrator
from durabletask.scheduled.schedule_entity import DELETE_OPERATION

__all__ = ["AsyncScheduleClient", "AsyncScheduledTaskClient", "ScheduleClient", "ScheduledTaskClient"]


class ScheduleClient:
    """Operations on one schedule.

    Args:
        client: The task hub client to send through.
        schedule_id: The schedule's ID.
        operation_timeout: Seconds to wait for each change to be applied (``TimeoutError`` after that).
    """

    def __init__(self, client: TaskHubGrpcClient, schedule_id: str, *, operation_timeout: float = 60) -> None:
        self._entity_id = _ops.entity_id(schedule_id)
        self._client = client
        self._schedule_id = schedule_id
        self._operation_timeout = operation_timeout

    @property
    def schedule_id(self) -> str:
        """The ID of this schedule."""
        return self._schedule_id

    def _run_operation(self, operation_name: str, input: object | None = None) -> None:
        instance_id = self._client.schedule_new_orchestration(
            execute_schedule_operation_orchestrator,
            input=_ops.operation_input(self._schedule_id, operation_name, input),
        )
        state = self._client.wait_for_orchestration_completion(instance_id, timeout=self._operation_timeout)
        _ops.check_outcome(self._schedule_id, operation_name, state)

    def create(self, options: ScheduleCreationOptions) -> None:
        """Create this schedule, or replace its configuration if it exists (it becomes active).

        Args:
            options: The schedule's ID, orchestration, interval or cron and time window.

        Raises:
            RuntimeError: The options were refused (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        self._run_operation(transitions.CREATE_SCHEDULE, options)

    def update(self, options: ScheduleUpdateOptions) -> None:
        """Change the fields ``options`` sets.

        Args:
            options: The fields to change; those left ``None`` stay as they are.

        Raises:
            ScheduleOperationNotFoundError: There is no such schedule.
            ScheduleOperationRefusedError: The schedule's status does not allow the change.
            RuntimeError: The operation failed otherwise (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        self._run_operation(transitions.UPDATE_SCHEDULE, options)

    def pause(self) -> None:
        """Stop starting runs (an active schedule only)."""
        self._run_operation(transitions.PAUSE_SCHEDULE)

    def resume(self) -> None:
        """Start runs again from the next due time (a paused schedule only)."""
        self._run_operation(transitions.RESUME_SCHEDULE)

    def delete(self) -> None:
        """Delete this schedule; runs already started go on."""
        self._run_operation(DELETE_OPERATION)

    def describe(self) -> ScheduleDescription:
        """The schedule's configuration and state.

        Raises:
            ScheduleNotFoundError: there is no such schedule.
        """
        return _ops.description_of(self._schedule_id, self._client.get_entity(self._entity_id, include_state=True))


class ScheduledTaskClient:
    """Creates, finds and lists schedules (needs a worker with ``configure_scheduled_tasks()``)."""

    def __init__(self, client: TaskHubGrpcClient, *, operation_timeout: float = 60) -> None:
        self._client = client
        self._operation_timeout = operation_timeout

    def get_schedule_client(self, schedule_id: str) -> ScheduleClient:
        """A handle on one schedule (whether it exists or not).

        Args:
            schedule_id: The schedule's ID.
        """
        return ScheduleClient(self._client, schedule_id, operation_timeout=self._operation_timeout)

    def create_schedule(self, options: ScheduleCreationOptions) -> ScheduleClient:
        """Create a schedule and return its handle.

        Args:
            options: The new schedule's ID, orchestration, interval or cron and time window.

        Raises:
            RuntimeError: The options were refused (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        handle = self.get_schedule_client(options.schedule_id)
        handle.create(options)
        return handle

    def get_schedule(self, schedule_id: str) -> ScheduleDescription | None:
        """The schedule, or ``None`` if there is none with this ID.

        Args:
            schedule_id: The schedule's ID.
        """
        try:
            return self.get_schedule_client(schedule_id).describe()
        except ScheduleNotFoundError:
            return None

    def list_schedules(self, schedule_query: ScheduleQuery | None = None) -> list[ScheduleDescription]:
        """Every schedule matching the query, read ``page_size`` entities at a time.

        The ID prefix is filtered by the backend; status and creation-time bounds here, after each page.

        Args:
            schedule_query: Filters by ID prefix, status and creation time, and the page size; every schedule when
                ``None``.
        """
        return _ops.matching(self._client.get_all_entities(_ops.entity_query(schedule_query)), schedule_query)

    @staticmethod
    def matches_filter(state: ScheduleState, schedule_query: ScheduleQuery | None) -> bool:
        """Whether a schedule state passes the query's status and creation-time filters.

        Args:
            state: A schedule entity's state.
            schedule_query: The query; ``None`` passes every state.
        """
        return _ops.matches_filter(state, schedule_query)


class AsyncScheduleClient:
    """Operations on one schedule, for asyncio code (see :class:`ScheduleClient`)."""

    def __init__(self, client: AsyncTaskHubGrpcClient, schedule_id: str, *, operation_timeout: float = 60) -> None:
        self._entity_id = _ops.entity_id(schedule_id)
        self._client = client
        self._schedule_id = schedule_id
        self._operation_timeout = operation_timeout

    @property
    def schedule_id(self) -> str:
        """The ID of this schedule."""
        return self._schedule_id

    async def _run_operation(self, operation_name: str, input: object | None = None) -> None:
        instance_id = await self._client.schedule_new_orchestration(
            execute_schedule_operation_orchestrator,
            input=_ops.operation_input(self._schedule_id, operation_name, input),
        )
        state = await self._client.wait_for_orchestration_completion(instance_id, timeout=self._operation_timeout)
        _ops.check_outcome(self._schedule_id, operation_name, state)

    async def create(self, options: ScheduleCreationOptions) -> None:
        """Create this schedule, or replace its configuration if it exists (it becomes active).

        Args:
            options: The schedule's ID, orchestration, interval or cron and time window.

        Raises:
            RuntimeError: The options were refused (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        await self._run_operation(transitions.CREATE_SCHEDULE, options)

    async def update(self, options: ScheduleUpdateOptions) -> None:
        """Change the fields ``options`` sets.

        Args:
            options: The fields to change; those left ``None`` stay as they are.

        Raises:
            ScheduleOperationNotFoundError: There is no such schedule.
            ScheduleOperationRefusedError: The schedule's status does not allow the change.
            RuntimeError: The operation failed otherwise (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        await self._run_operation(transitions.UPDATE_SCHEDULE, options)

    async def pause(self) -> None:
        """Stop starting runs (an active schedule only)."""
        await self._run_operation(transitions.PAUSE_SCHEDULE)

    async def resume(self) -> None:
        """Start runs again from the next due time (a paused schedule only)."""
        await self._run_operation(transitions.RESUME_SCHEDULE)

    async def delete(self) -> None:
        """Delete this schedule; runs already started go on."""
        await self._run_operation(DELETE_OPERATION)

    async def describe(self) -> ScheduleDescription:
        """The schedule's configuration and state (``ScheduleNotFoundError`` if there is none)."""
        metadata = await self._client.get_entity(self._entity_id, include_state=True)
        return _ops.description_of(self._schedule_id, metadata)


class AsyncScheduledTaskClient:
    """Creates, finds and lists schedules, for asyncio code (see :class:`ScheduledTaskClient`)."""

    def __init__(self, client: AsyncTaskHubGrpcClient, *, operation_timeout: float = 60) -> None:
        self._client = client
        self._operation_timeout = operation_timeout

    def get_schedule_client(self, schedule_id: str) -> AsyncScheduleClient:
        """A handle on one schedule (whether it exists or not).

        Args:
            schedule_id: The schedule's ID.
        """
        return AsyncScheduleClient(self._client, schedule_id, operation_timeout=self._operation_timeout)

    async def create_schedule(self, options: ScheduleCreationOptions) -> AsyncScheduleClient:
        """Create a schedule and return its handle.

        Args:
            options: The new schedule's ID, orchestration, interval or cron and time window.

        Raises:
            RuntimeError: The options were refused (e.g. ``start_at`` later than ``end_at``).
            TimeoutError: The operation did not finish within the client's ``operation_timeout``.
        """
        handle = self.get_schedule_client(options.schedule_id)
        await handle.create(options)
        return handle

    async def get_schedule(self, schedule_id: str) -> ScheduleDescription | None:
        """The schedule, or ``None`` if there is none with this ID.

        Args:
            schedule_id: The schedule's ID.
        """
        try:
            return await self.get_schedule_client(schedule_id).describe()
        except ScheduleNotFoundError:
            return None

    async def list_schedules(self, schedule_query: ScheduleQuery | None = None) -> list[ScheduleDescription]:
        """Every schedule matching the query (see :meth:`ScheduledTaskClient.list_schedules`).

        Args:
            schedule_query: Filters by ID prefix, status and creation time, and the page size; every schedule when
                ``None``.
        """
        found = await self._client.get_all_entities(_ops.entity_query(schedule_query))
        return _ops.matching(found, schedule_query)
