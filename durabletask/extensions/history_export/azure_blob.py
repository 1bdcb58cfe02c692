"""Exported files in Azure Blob Storage: a :class:`~.writer.HistoryWriter` over ``azure-storage-blob``.

Needs the optional dependency: ``pip install dtscale[history-export-azure]``. The writer is synchronous, as the
export activities are.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

try:
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient, ContentSettings
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "The 'azure-storage-blob' package is required for the Azure Blob history-export writer. "
        "Install it with: pip install dtscale[history-export-azure]"
    ) from exc


@dataclass
class AzureBlobHistoryExportWriterOptions:
    """Where and how :class:`AzureBlobHistoryExportWriter` writes.

    Give either ``connection_string``, or ``account_url`` with a ``credential`` (e.g. ``DefaultAzureCredential``).

    Attributes:
        container_name: The container every file goes to; created on the first write unless
            ``create_container_if_not_exists`` is off.
        connection_string: A storage connection string (not with ``account_url``).
        account_url: The account's blob endpoint, ``https://<account>.blob.core.windows.net``.
        credential: The token credential used with ``account_url``.
        api_version: A storage API version to pin (useful with older Azurite releases).
        create_container_if_not_exists: Create the container before the first write.
        overwrite: Replace a blob of the same name (``True``), or fail instead, for write-once exports.
        retry_total: How many times the storage client retries a failed request (``None``: its default, which
            backs off for about a minute before an unreachable account is reported). Not in Microsoft's options.
    """

    container_name: str
    connection_string: str | None = None
    account_url: str | None = None
    credential: Any = field(default=None, repr=False)
    api_version: str | None = None
    create_container_if_not_exists: bool = True
    overwrite: bool = True
    retry_total: int | None = None

    def __post_init__(self) -> None:
        if not self.container_name:
            raise ValueError("container_name is required")
        if self.connection_string and self.account_url:
            raise ValueError("'connection_string' and 'account_url' are mutually exclusive")
        if not self.connection_string and not self.account_url:
            raise ValueError("Either 'connection_string' or 'account_url' (with 'credential') must be provided")
        if self.account_url and self.credential is None:
            raise ValueError("'credential' is required when 'account_url' is provided")
        if self.retry_total is not None and self.retry_total < 0:
            raise ValueError(f"retry_total must be zero or more; got {self.retry_total}")


class AzureBlobHistoryExportWriter:
    """Uploads exported files as block blobs, with their content type, encoding and metadata.

    The container comes from the options: the ``container`` a job names is not used, so one writer serves one
    container (run one writer per container to route jobs to different ones).
    """

    def __init__(self, options: AzureBlobHistoryExportWriterOptions) -> None:
        self._options = options
        extra: dict[str, Any] = {"api_version": options.api_version} if options.api_version else {}
        if options.retry_total is not None:
            extra["retry_total"] = options.retry_total
        if options.connection_string:
            self._service = BlobServiceClient.from_connection_string(options.connection_string, **extra)
        else:
            self._service = BlobServiceClient(
                account_url=str(options.account_url), credential=options.credential, **extra
            )
        self._container = self._service.get_container_client(options.container_name)
        self._container_ready = not options.create_container_if_not_exists
        self._lock = threading.Lock()

    def close(self) -> None:
        """Closes the blob service client. The writer is also a context manager that closes it on exit."""
        self._service.close()

    def __enter__(self) -> AzureBlobHistoryExportWriter:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def write(
        self,
        *,
        instance_id: str,
        container: str,
        blob_name: str,
        payload: bytes,
        content_type: str,
        content_encoding: str | None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Uploads ``payload`` as the blob ``blob_name`` of the options' container, creating the container first if
        asked to.

        The container of the options wins over ``container``: the writer is bound to one container. The blob gets
        ``content_type``, ``content_encoding`` (only when set) and ``metadata``; with ``overwrite`` on (the default), a
        retried export replaces the blob it wrote before.

        Args:
            instance_id: The instance whose history this is (unused: the blob name already depends on it).
            container: The job's destination container (unused, see above).
            blob_name: The blob's name, prefix and extension included.
            payload: The file's bytes.
            content_type: The format's content type.
            content_encoding: ``"gzip"`` for compressed formats, else ``None``.
            metadata: String pairs stored on the blob.

        Raises:
            azure.core.exceptions.AzureError: The storage account refused or could not be reached; the export activity
                retries, then records the failure on the job.
        """
        del instance_id, container  # the container is fixed by the options; see the class docstring
        self._ensure_container()
        # An empty Content-Encoding would be stored on the blob and mislead readers: set it only when compressed.
        settings = (
            ContentSettings(content_type=content_type, content_encoding=content_encoding)
            if content_encoding
            else ContentSettings(content_type=content_type)
        )
        self._container.upload_blob(
            name=blob_name,
            data=payload,
            overwrite=self._options.overwrite,
            content_settings=settings,
            metadata=dict(metadata) if metadata else None,
        )

    def _ensure_container(self) -> None:
        if self._container_ready:
            return
        with self._lock:
            if self._container_ready:
                return
            with contextlib.suppress(ResourceExistsError):
                self._container.create_container()
            self._container_ready = True


__all__ = ["AzureBlobHistoryExportWriter", "AzureBlobHistoryExportWriterOptions"]
