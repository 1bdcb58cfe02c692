"""Creating, inspecting, listing, waiting for and deleting export jobs.

Typical use::

    writer = LocalFolderHistoryWriter("/var/exports")   # or AzureBlobHistoryExportWriter(...)
    export_client = ExportHistoryClient(TaskHubGrpcClient(host_address="localhost:4001"), writer)
    with TaskHubGrpcWorker(host_address="localhost:4001") as w:
        export_client.register_worker(w)
        w.start()
        job = export_client.create_job(ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=datetime(2026, 1, 1, tzinfo=timezone.utc),
            completed_time_to=datetime(2026, 2, 1, tzinfo=timezone.utc),
            destination=ExportDestination(container="exports", prefix="january"),
        ))
        final = export_client.get_job_client(job.job_id).wait(timeout=300)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc

from durabletask import client as client_module
from durabletask import entities
from durabletask import worker as worker_module
from durabletask.extensions.history_export import _client_common as common
from durabletask.extensions.history_export._async_client import AsyncExportHistoryClient, AsyncExportHistoryJobClient
from durabletask.extensions.history_export._constants import (
    ENTITY_NAME,
    ORCHESTRATOR_NAME,
    orchestrator_instance_id_for,
)
from durabletask.extensions.history_export._logging import logger
from durabletask.extensions.history_export.activities import HistoryExportContext
from durabletask.extensions.history_export.activities import register as register_activities
from durabletask.extensions.history_export.entity import ExportJobEntity
from durabletask.extensions.history_export.exceptions import ExportJobNotFoundError
from durabletask.extensions.history_export.models import (
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobQuery,
    ExportJobStatus,
)
from durabletask.extensions.history_export.orchestrator import export_job_orchestrator
from durabletask.extensions.history_export.writer import HistoryWriter


def register_worker_parts(
    worker_instance: worker_module.TaskHubGrpcWorker,
    client: client_module.TaskHubGrpcClient,
    writer: HistoryWriter,
) -> None:
    """Adds the entity, both activities and the orchestration to a worker, the activities bound to ``client``
    and ``writer``."""
    worker_instance.add_entity(ExportJobEntity, name=ENTITY_NAME)
    context = HistoryExportContext(client=client, writer=writer)
    register_activities(worker_instance, lambda: context)
    worker_instance.add_orchestrator(export_job_orchestrator)


class ExportHistoryClient:
    """Creates and manages export jobs on a task hub, and wires the job machinery into workers."""

    def __init__(self, durable_task_client: client_module.TaskHubGrpcClient, writer: HistoryWriter) -> None:
        self._client = durable_task_client
        self._writer = writer

    def register_worker(self, worker_instance: worker_module.TaskHubGrpcWorker) -> None:
        """Adds the export-job entity, activities and orchestration to ``worker_instance`` (before it starts).

        The activities use this client's task-hub client and writer.

        Args:
            worker_instance: The worker, not started yet.
        """
        register_worker_parts(worker_instance, self._client, self._writer)

    def create_job(self, options: ExportJobCreationOptions, *, job_id: str | None = None) -> ExportJobDescription:
        """Creates a job (ID generated when not given) and starts it; returns its description as submitted.

        Args:
            options: What to export (time window, statuses, format) and where.
            job_id: The job's ID; a random one when ``None``.

        Raises:
            ValueError: the options are invalid (the message names the field).

        A job with this ID that is still ACTIVE refuses the create and keeps its configuration, as with
        Microsoft's client; a warning is logged (a COMPLETED or FAILED one starts over).
        """
        new = common.NewJob(options, job_id)
        new.warn_if_active(self.get_job(new.job_id))
        self._client.signal_entity(new.entity_id, ExportJobEntity.OP_CREATE, input=new.operation_input)
        return new.description()

    def get_job(self, job_id: str) -> ExportJobDescription | None:
        """The job's current description, or ``None`` when there is no such job.

        Args:
            job_id: The job's ID.
        """
        return common.description_of(job_id, self._client.get_entity(common.entity_id(job_id), include_state=True))

    def list_jobs(self, query: ExportJobQuery | None = None) -> Iterator[ExportJobDescription]:
        """Every export job matching ``query`` (status and last-modified filters).

        Args:
            query: Status and last-modified filters; every job when ``None``.
        """
        query = query or ExportJobQuery()
        for meta in self._client.get_all_entities(common.entity_query(query)):
            desc = common.listed_job(meta, query)
            if desc is not None:
                yield desc

    def wait_for_job(self, job_id: str, *, timeout: float = 300.0, poll_interval: float = 1.0) -> ExportJobDescription:
        """Polls until the job is COMPLETED or FAILED.

        Args:
            job_id: The job's ID.
            timeout: Seconds to wait (above zero).
            poll_interval: Seconds between reads of the job's state (above zero).

        Raises:
            ValueError: ``timeout`` or ``poll_interval`` is not above zero.
            TimeoutError: it is still ACTIVE after ``timeout`` seconds.
            ExportJobNotFoundError: no job with this ID appeared within ``timeout``.
        """
        common.check_wait_arguments(timeout, poll_interval)
        deadline = time.monotonic() + timeout
        last: ExportJobDescription | None = None
        while True:
            desc = self.get_job(job_id)
            if desc is not None:
                last = desc
                if desc.status is not ExportJobStatus.ACTIVE:
                    return desc
            if time.monotonic() >= deadline:
                if last is None:
                    raise ExportJobNotFoundError(job_id)
                raise TimeoutError(common.timeout_message(job_id, timeout, last))
            time.sleep(poll_interval)

    def delete_job(self, job_id: str) -> None:
        """Stops the job and removes it: its state, then its orchestration (terminated, awaited, purged).

        Exported files stay where they are. A job or orchestration that does not exist is not an error.

        Args:
            job_id: The job's ID.
        """
        orchestration = orchestrator_instance_id_for(job_id)
        self._client.signal_entity(common.entity_id(job_id), ExportJobEntity.OP_DELETE)
        try:
            self._client.terminate_orchestration(orchestration, recursive=True)
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise
        try:
            self._client.wait_for_orchestration_completion(orchestration, timeout=common.DELETE_WAIT_TIMEOUT_SECONDS)
        except TimeoutError:
            logger.warning(
                "Export job %r: orchestration %r did not stop in time; purging anyway", job_id, orchestration
            )
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise
        try:
            self._client.purge_orchestration(orchestration, recursive=True)
        except grpc.RpcError as ex:
            if not common.is_not_found(ex):
                raise

    def cancel_job(self, job_id: str) -> None:
        """The same as :meth:`delete_job` (the way to stop a continuous job).

        Args:
            job_id: The job's ID.
        """
        self.delete_job(job_id)

    def get_job_client(self, job_id: str) -> ExportHistoryJobClient:
        """A client bound to one job.

        Args:
            job_id: The job's ID.
        """
        return ExportHistoryJobClient(self, job_id)

    @property
    def entity_name(self) -> str:
        """The name of the job entity, ``ExportJobEntity`` (as in Microsoft's extension): jobs are
        ``@exportjobentity@<job id>``.
        """
        return ENTITY_NAME

    @property
    def orchestrator_name(self) -> str:
        """The name of the orchestration that drives each job (``export_job_orchestrator``)."""
        return ORCHESTRATOR_NAME

    @property
    def writer(self) -> HistoryWriter:
        """The writer the jobs registered through this client store exported files with."""
        return self._writer

    @property
    def underlying_client(self) -> client_module.TaskHubGrpcClient:
        """The task hub client this export client calls."""
        return self._client


class ExportHistoryJobClient(common.JobHandle):
    """One job's operations, from :meth:`ExportHistoryClient.get_job_client`."""

    def __init__(self, parent: ExportHistoryClient, job_id: str) -> None:
        super().__init__(job_id)
        self._parent = parent

    @property
    def entity_id(self) -> entities.EntityInstanceId:
        """The entity holding this job's state (``@exportjobentity@<job ID>``)."""
        return common.entity_id(self._job_id)

    def describe(self) -> ExportJobDescription | None:
        """The job's current description, or ``None`` when it does not exist."""
        return self._parent.get_job(self._job_id)

    def wait(self, *, timeout: float = 300.0, poll_interval: float = 1.0) -> ExportJobDescription:
        """See :meth:`ExportHistoryClient.wait_for_job`.

        Args:
            timeout: Seconds to wait (above zero).
            poll_interval: Seconds between reads of the job's state (above zero).
        """
        return self._parent.wait_for_job(self._job_id, timeout=timeout, poll_interval=poll_interval)

    def delete(self) -> None:
        """See :meth:`ExportHistoryClient.delete_job`."""
        self._parent.delete_job(self._job_id)


__all__ = [
    "AsyncExportHistoryClient",
    "AsyncExportHistoryJobClient",
    "ExportHistoryClient",
    "ExportHistoryJobClient",
]
