"""The asyncio versions of the export clients (exported from :mod:`.client`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc

from durabletask import client as client_module
from durabletask.extensions.history_export import _client_common as common
from durabletask.extensions.history_export._constants import orchestrator_instance_id_for
from durabletask.extensions.history_export._logging import logger
from durabletask.extensions.history_export.entity import ExportJobEntity
from durabletask.extensions.history_export.exceptions import ExportJobNotFoundError
from durabletask.extensions.history_export.models import (
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobQuery,
)
from durabletask.extensions.history_export.writer import HistoryWriter


class AsyncExportHistoryClient:
    """Creates and manages export jobs with an :class:`~durabletask.client.AsyncTaskHubGrpcClient`.

    Workers run the jobs; register the job machinery on them with :class:`~.client.ExportHistoryClient`.
    """

    def __init__(self, durable_task_client: client_module.AsyncTaskHubGrpcClient, writer: HistoryWriter) -> None:
        self._client = durable_task_client
        self._writer = writer

    async def create_job(self, options: ExportJobCreationOptions, *, job_id: str | None = None) -> ExportJobDescription:
        """See :meth:`ExportHistoryClient.create_job`.

        Args:
            options: What to export (time window, statuses, format) and where.
            job_id: The job's ID; a random one when ``None``.

        Raises:
            ValueError: The options are invalid (the message names the field).
        """
        new = common.NewJob(options, job_id)
        new.warn_if_active(await self.get_job(new.job_id))
        await self._client.signal_entity(new.entity_id, ExportJobEntity.OP_CREATE, input=new.operation_input)
        return new.description()

    async def get_job(self, job_id: str) -> ExportJobDescription | None:
        """The job's current description, or ``None`` when there is no such job.

        Args:
            job_id: The job's ID.
        """
        meta = await self._client.get_entity(common.entity_id(job_id), include_state=True)
        return common.description_of(job_id, meta)

    async def list_jobs(self, query: ExportJobQuery | None = None) -> AsyncIterator[ExportJobDescription]:
        """Every export job matching ``query``.

        Args:
            query: Status and last-modified filters; every job when ``None``.
        """
        query = query or ExportJobQuery()
        for meta in await self._client.get_all_entities(common.entity_query(query)):
            desc = common.listed_job(meta, query)
            if desc is not None:
                yield desc

    async def wait_for_job(
        self, job_id: str, *, timeout: float = 300.0, poll_interval: float = 1.0
    ) -> ExportJobDescription:
        """See :meth:`ExportHistoryClient.wait_for_job`.

        Args:
            job_id: The job's ID.
            timeout: Seconds to wait (above zero).
            poll_interval: Seconds between reads of the job's state (above zero).

        Raises:
            ValueError: ``timeout`` or ``poll_interval`` is not above zero.
            TimeoutError: The job is still ACTIVE after ``timeout`` seconds.
            ExportJobNotFoundError: No job with this ID appeared within ``timeout``.
        """
        common.check_wait_arguments(timeout, poll_interval)
        deadline = time.monotonic() + timeout
        last: ExportJobDescription | None = None
        while True:
            desc = await self.get_job(job_id)
            if desc is not None:
                last = desc
                if desc.status in common.TERMINAL_JOB_STATUSES:
                    return desc
            if time.monotonic() >= deadline:
                if last is None:
                    raise ExportJobNotFoundError(job_id)
                raise TimeoutError(common.timeout_message(job_id, timeout, last))
            await asyncio.sleep(poll_interval)

    async def delete_job(self, job_id: str) -> None:
        """See :meth:`ExportHistoryClient.delete_job`.

        Args:
            job_id: The job's ID.
        """
        orchestration = orchestrator_instance_id_for(job_id)
        await self._client.signal_entity(common.entity_id(job_id), ExportJobEntity.OP_DELETE)
        try:
            await self._client.terminate_orchestration(orchestration, recursive=True)
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise
        try:
            await self._client.wait_for_orchestration_completion(
                orchestration, timeout=common.DELETE_WAIT_TIMEOUT_SECONDS
            )
        except TimeoutError:
            logger.warning(
                "Export job %r: orchestration %r did not stop in time; purging anyway", job_id, orchestration
            )
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise
        try:
            await self._client.purge_orchestration(orchestration, recursive=True)
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise

    async def cancel_job(self, job_id: str) -> None:
        """The same as :meth:`delete_job`.

        Args:
            job_id: The job's ID.
        """
        await self.delete_job(job_id)

    def get_job_client(self, job_id: str) -> AsyncExportHistoryJobClient:
        """A client bound to one job.

        Args:
            job_id: The job's ID.
        """
        return AsyncExportHistoryJobClient(self, job_id)

    @property
    def writer(self) -> HistoryWriter:
        """The writer the jobs registered through this client store exported files with."""
        return self._writer


class AsyncExportHistoryJobClient(common.JobHandle):
    """One job's operations, from :meth:`AsyncExportHistoryClient.get_job_client`."""

    def __init__(self, parent: AsyncExportHistoryClient, job_id: str) -> None:
        super().__init__(job_id)
        self._parent = parent

    async def describe(self) -> ExportJobDescription | None:
        """The job's status, configuration, counters and failures, or ``None`` if the job does not exist."""
        return await self._parent.get_job(self._job_id)

    async def wait(self, *, timeout: float = 300.0, poll_interval: float = 1.0) -> ExportJobDescription:
        """Polls until the job is COMPLETED or FAILED, and returns its description then.

        Args:
            timeout: Seconds to wait at most.
            poll_interval: Seconds between two reads of the job's state.

        Raises:
            TimeoutError: The job is still ACTIVE after ``timeout`` seconds.
            ExportJobNotFoundError: No job with this ID appeared within ``timeout``.
        """
        return await self._parent.wait_for_job(self._job_id, timeout=timeout, poll_interval=poll_interval)

    async def delete(self) -> None:
        """Stops the job and removes its state and its orchestration; the exported files stay. See
        :meth:`AsyncExportHistoryClient.delete_job`.
        """
        await self._parent.delete_job(self._job_id)


__all__ = ["AsyncExportHistoryClient", "AsyncExportHistoryJobClient"]
