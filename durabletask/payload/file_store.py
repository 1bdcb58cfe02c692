"""A payload store in a local folder, for development and tests without Azure Storage."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from durabletask.payload.store import (
    TOKEN_PREFIX,
    LargePayloadStorageOptions,
    PayloadStore,
    make_token,
    pack_into,
    parse_token,
    unpack_from,
)


@dataclass
class FilePayloadStoreOptions(LargePayloadStorageOptions):
    """Options of :class:`FilePayloadStore`.

    Attributes:
        directory: The folder holding one subfolder per container.
        container_name: The container (subfolder) new payloads go to, as in a blob store.
        delete_payloads_on_purge: Purging one instance through a client with this store also deletes the
            payloads stored for it (off by default, as other clients may still read them).
    """

    directory: str | os.PathLike[str] = ".durabletask-payloads"
    container_name: str = "durabletask-payloads"
    delete_payloads_on_purge: bool = False


class FilePayloadStore(PayloadStore):
    """Stores payloads as files ``<directory>/<container>/<instance>/<id>``, with the blob store's tokens.

    The tokens are the ``blob:v1:<container>:<name>`` tokens of the Azure blob store, so a folder synced
    from a storage container (or the reverse) reads the same way.
    """

    def __init__(self, options: FilePayloadStoreOptions | str | os.PathLike[str]) -> None:
        if not isinstance(options, FilePayloadStoreOptions):
            options = FilePayloadStoreOptions(directory=options)
        if not options.container_name or "/" in options.container_name or options.container_name in {".", ".."}:
            raise ValueError(f"container_name must be a plain folder name, got {options.container_name!r}")
        self._options = options
        self._root = Path(options.directory).resolve()

    @property
    def options(self) -> FilePayloadStoreOptions:
        return self._options

    def _path(self, token: str) -> Path:
        container, name = parse_token(token)
        path = (self._root / container / name).resolve()
        # A token comes from the wire: it must not name a file outside the store's folder.
        if not path.is_relative_to(self._root / container) or "/" in container or container in {".", ".."}:
            raise ValueError(f"payload token points outside the store's folder: {token!r}")
        return path

    #: ``upload`` takes any bytes-like object, so the helpers hand it a view instead of a copy; or the payload's
    #: text itself, which it encodes to UTF-8 in pieces as it writes it.
    reads_buffers = True
    reads_text = True

    def upload(self, data: bytes, *, instance_id: str | None = None) -> str:
        unique = uuid.uuid4().hex
        # Instance IDs may hold '/' or '..': quoting keeps each one a single folder name.
        name = f"{quote(instance_id, safe='')}/{unique}" if instance_id else unique
        path = self._root / self._options.container_name / name
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with partial.open("wb") as out:  # compressed straight to the file: no copy of the stored bytes in memory
            pack_into(out, data, self._options.enable_compression)
        partial.replace(path)  # readers never see half a payload
        return make_token(self._options.container_name, name)

    async def upload_async(self, data: bytes, *, instance_id: str | None = None) -> str:
        return await asyncio.to_thread(self.upload, data, instance_id=instance_id)

    def download(self, token: str) -> bytes:
        path = self._path(token)
        try:
            source = path.open("rb")
        except FileNotFoundError:
            raise FileNotFoundError(f"no stored payload {token!r} (looked for {path})") from None
        with source:  # gunzipped as it is read: the file's bytes are never all in memory
            return unpack_from(source)

    async def download_async(self, token: str) -> bytes:
        return await asyncio.to_thread(self.download, token)

    def is_known_token(self, value: str) -> bool:
        if not value.startswith(TOKEN_PREFIX):  # every payload a walk meets is asked: keep the common case cheap
            return False
        try:
            self._path(value)
        except ValueError:
            return False
        return True

    def delete_instance_payloads(self, instance_id: str) -> int:
        """Delete every payload stored for ``instance_id``; returns how many there were.

        Args:
            instance_id: The instance whose folder of payloads to delete.
        """
        folder = self._root / self._options.container_name / quote(instance_id, safe="")
        if not folder.is_dir():
            return 0
        count = sum(1 for _ in folder.iterdir())
        shutil.rmtree(folder)
        return count
