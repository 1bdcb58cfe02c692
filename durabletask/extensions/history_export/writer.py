"""The destination of exported files, as a protocol any storage can implement.

The export activity calls :meth:`HistoryWriter.write` once per exported instance with the file's bytes (already
compressed when the format says so) and its content type and encoding. Implementations need not inherit from
anything: any object with a matching ``write`` is a writer. :mod:`.local_folder` and :mod:`.azure_blob` hold the
two that ship with the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable


@runtime_checkable
class HistoryWriter(Protocol):
    """Stores one exported file. Called from activity threads, so a shared writer must be thread-safe."""

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
        """Store ``payload`` as ``blob_name`` in ``container``.

        Args:
            instance_id: The instance whose history this is (a key or hint for stores that want one).
            container: The job's ``ExportDestination.container``; a writer bound to one container may ignore it.
            blob_name: The name within the container, prefix and extension included.
            payload: The file's bytes.
            content_type: The format's content type, e.g. ``application/x-ndjson``.
            content_encoding: ``"gzip"`` for compressed formats, else ``None``.
            metadata: Small string pairs to keep beside the file where the store can (``{"instance_id": ...}``).

        Writing the same name twice must leave one file: an export that is retried writes it again.
        """
        ...


__all__ = ["HistoryWriter"]
