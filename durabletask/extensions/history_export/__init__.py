"""Exporting the histories of finished orchestrations to blob storage or a local folder.

Export jobs are durable: an entity (:class:`ExportJobEntity`) holds each job's state and progress, and an
orchestration with two activities pages through the terminal instances of a completed-time window (``BATCH``) or
follows instances as they finish (``CONTINUOUS``), writing one file per instance through a :class:`HistoryWriter`.
The file format and names are those of Microsoft's ``durabletask.extensions.history_export``, so files written by
either SDK are read by the other. Writers: :mod:`.local_folder` (no dependencies) and :mod:`.azure_blob`
(extra ``history-export-azure``).
"""

from durabletask.extensions.history_export._constants import (
    ENTITY_NAME,
    ORCHESTRATOR_NAME,
    orchestrator_instance_id_for,
)
from durabletask.extensions.history_export.activities import (
    HistoryExportContext,
    HistoryExportContextResolver,
    build_activities,
    run_export_instance_history,
    run_list_terminal_instances,
)
from durabletask.extensions.history_export.client import (
    AsyncExportHistoryClient,
    AsyncExportHistoryJobClient,
    ExportHistoryClient,
    ExportHistoryJobClient,
)
from durabletask.extensions.history_export.entity import ExportJobEntity
from durabletask.extensions.history_export.exceptions import (
    ExportJobError,
    ExportJobInvalidTransitionError,
    ExportJobNotFoundError,
)
from durabletask.extensions.history_export.local_folder import LocalFolderHistoryWriter
from durabletask.extensions.history_export.models import (
    STATE_SCHEMA_VERSION,
    ExportCheckpoint,
    ExportDestination,
    ExportFailure,
    ExportFilter,
    ExportFormat,
    ExportFormatKind,
    ExportJobConfiguration,
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobQuery,
    ExportJobState,
    ExportJobStatus,
    ExportMode,
)
from durabletask.extensions.history_export.reader import ExportedHistory, read_exported_history
from durabletask.extensions.history_export.writer import HistoryWriter

__all__ = [
    "ENTITY_NAME",
    "ORCHESTRATOR_NAME",
    "STATE_SCHEMA_VERSION",
    "AsyncExportHistoryClient",
    "AsyncExportHistoryJobClient",
    "ExportCheckpoint",
    "ExportDestination",
    "ExportFailure",
    "ExportFilter",
    "ExportFormat",
    "ExportFormatKind",
    "ExportHistoryClient",
    "ExportHistoryJobClient",
    "ExportJobConfiguration",
    "ExportJobCreationOptions",
    "ExportJobDescription",
    "ExportJobEntity",
    "ExportJobError",
    "ExportJobInvalidTransitionError",
    "ExportJobNotFoundError",
    "ExportJobQuery",
    "ExportJobState",
    "ExportJobStatus",
    "ExportMode",
    "ExportedHistory",
    "HistoryExportContext",
    "HistoryExportContextResolver",
    "HistoryWriter",
    "LocalFolderHistoryWriter",
    "build_activities",
    "orchestrator_instance_id_for",
    "read_exported_history",
    "run_export_instance_history",
    "run_list_terminal_instances",
]
