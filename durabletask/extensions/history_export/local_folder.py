"""A :class:`~.writer.HistoryWriter` that stores exported files in a local folder, for development and for
operators without Azure.

The layout is the blob layout: ``<root>/<container>/<prefix>/<sha256>.jsonl.gz``. Each file is written to a
temporary name and renamed into place, so a reader never sees half a file and a retried export replaces the
file whole. Metadata, which a file system cannot hold beside a file, is not kept (the file carries the instance
ID itself).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath


class LocalFolderHistoryWriter:
    """Writes exported files under ``root``, one sub-folder per container.

    Args:
        root: The folder exports go under; created when missing.
        overwrite: When ``False``, writing a name that already exists raises ``FileExistsError``
            (write-once exports).
    """

    def __init__(self, root: str | os.PathLike[str], *, overwrite: bool = True) -> None:
        self._root = Path(root).resolve()
        self._overwrite = overwrite

    @property
    def root(self) -> Path:
        """The folder under which each container is a subfolder."""
        return self._root

    def path_for(self, container: str, blob_name: str) -> Path:
        """Where ``blob_name`` of ``container`` is stored; refuses names that would leave the root.

        Args:
            container: A folder under the root (may hold ``/``).
            blob_name: The file's relative path within it.

        Raises:
            ValueError: Either holds ``..``, an absolute part or an empty part.
        """
        parts = [*PurePosixPath(container).parts, *PurePosixPath(blob_name).parts]
        if not parts or any(p in ("..", "/", "") or os.sep in p for p in parts):
            raise ValueError(f"blob_name {blob_name!r} in container {container!r} is not a relative path")
        return self._root.joinpath(*parts)

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
        """Writes ``payload`` to ``<root>/<container>/<blob_name>``, whole: to a temporary file first, then renamed.

        A reader never sees half a file, and a retried export replaces the file it wrote before.

        Args:
            instance_id: The instance whose history this is (unused: the name already depends on it).
            container: The job's destination container: a subfolder of the root.
            blob_name: The file's name within the container, prefix folders and extension included.
            payload: The file's bytes.
            content_type: Unused: the file's extension says its format.
            content_encoding: Unused: the file's extension says whether it is compressed.
            metadata: Unused: the file's first line carries the instance's metadata.

        Raises:
            ValueError: ``container`` or ``blob_name`` would lead outside the root.
            FileExistsError: The file exists and the writer was made with ``overwrite=False``.
        """
        del instance_id, content_type, content_encoding, metadata  # the file itself carries what a reader needs
        target = self.path_for(container, blob_name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not self._overwrite and target.exists():
            raise FileExistsError(f"exported file {str(target)!r} already exists and overwrite is off")
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
            if self._overwrite:
                os.replace(temporary, target)
            else:
                # A hard link fails when the name exists, so two writers racing cannot both win.
                os.link(temporary, target)
                os.unlink(temporary)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    def close(self) -> None:
        """Nothing to release; present so every shipped writer can be closed the same way."""

    def __enter__(self) -> LocalFolderHistoryWriter:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


__all__ = ["LocalFolderHistoryWriter"]
