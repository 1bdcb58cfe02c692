"""Where ``durabletask export`` writes: a local folder or an Azure Blob container, checked before any export."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Azure's container naming rules: 3-63 characters, lowercase letters, digits and single hyphens, starting and
# ending with a letter or digit.
_CONTAINER_NAME = re.compile(r"^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$")


class DestinationError(RuntimeError):
    """The destination cannot be written; the message names it and says why."""


@dataclass(frozen=True)
class Destination:
    """A resolved export destination: the writer, the ``container`` the export names, and a printable place."""

    kind: str  # "folder" or "blob"
    container: str
    where: str
    writer: Any
    # Where the checkpoint goes unless --checkpoint says otherwise.
    checkpoint_dir: Path

    def close(self) -> None:
        close = getattr(self.writer, "close", None)
        if callable(close):
            close()


def check_container_name(name: str) -> None:
    if not _CONTAINER_NAME.match(name):
        raise ValueError(
            f"--to {name!r} is not a valid blob container name (3-63 lowercase letters, digits and single "
            "hyphens, starting and ending with a letter or digit)"
        )


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "durabletask" / "exports"


def folder(path: str) -> Destination:
    """``path`` as the export's folder: files go to ``path/[prefix/]<name>.jsonl.gz``."""
    from durabletask.extensions.history_export.local_folder import LocalFolderHistoryWriter

    target = Path(path).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise DestinationError(f"--to {path!r} exists and is not a folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DestinationError(f"cannot create the folder {str(target)!r}: {exc.strerror or exc}") from exc
    if not os.access(target, os.W_OK):
        raise DestinationError(f"the folder {str(target)!r} is not writable")
    # The folder writer lays files out as <root>/<container>/...; the folder's parent and name are those two.
    writer = LocalFolderHistoryWriter(target.parent)
    return Destination("folder", target.name, str(target), writer, target / ".durabletask-export")


def blob(container: str, connection_string: str, *, timeout: float = 10.0) -> Destination:
    """The blob ``container`` of the storage account in ``connection_string``; created when missing.

    The account is reached once here with a short timeout and no retries, so an unreachable or refused
    destination fails at once with one clear line instead of after minutes of per-instance retries.
    """
    check_container_name(container)
    try:
        from azure.core.exceptions import AzureError, ResourceExistsError
        from azure.storage.blob import BlobServiceClient

        from durabletask.extensions.history_export.azure_blob import (
            AzureBlobHistoryExportWriter,
            AzureBlobHistoryExportWriterOptions,
        )
    except ImportError as exc:
        raise DestinationError(
            f"writing to a blob container needs azure-storage-blob: pip install 'dtscale[history-export-azure]' ({exc})"
        ) from exc
    try:
        probe = BlobServiceClient.from_connection_string(
            connection_string, retry_total=0, connection_timeout=timeout, read_timeout=timeout
        )
    except ValueError as exc:
        raise DestinationError(f"--blob-connection-string is not a valid connection string: {exc}") from exc
    where = f"{probe.url.rstrip('/')}/{container}"
    try:
        with probe:
            probe.create_container(container)
    except ResourceExistsError:
        pass
    except AzureError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DestinationError(f"cannot reach blob container {container!r} at {where}: {reason}") from exc
    writer = AzureBlobHistoryExportWriter(
        AzureBlobHistoryExportWriterOptions(container_name=container, connection_string=connection_string)
    )
    return Destination("blob", container, where, writer, _cache_dir())
