"""The payload store in Azure Blob Storage, on ``azure-storage-blob`` (sync and asyncio clients)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

from durabletask.extensions.azure_blob_payloads.options import BlobPayloadStoreOptions
from durabletask.payload.store import TOKEN_PREFIX, PayloadStore, make_token, pack_into, parse_token, unpack_from

_MISSING_EXTRA = "BlobPayloadStore needs the azure-storage-blob package: pip install 'dtscale[azure-blob]'"


#: A blob larger than this is uploaded in blocks of this size, read from the spooled file one at a time; up to
#: it, in one request. (The storage client's default, 64 MiB, would read a whole large payload back into memory.)
_BLOCK_BYTES = 4 * 1024 * 1024


def _client_kwargs(options: BlobPayloadStoreOptions) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "max_single_put_size": _BLOCK_BYTES,
        "max_block_size": _BLOCK_BYTES,
        "max_single_get_size": _BLOCK_BYTES,
        "max_chunk_get_size": _BLOCK_BYTES,
    }
    if options.api_version:
        kwargs["api_version"] = options.api_version
    if options.retry_total is not None:
        kwargs["retry_total"] = options.retry_total
    return kwargs


@contextlib.contextmanager
def _spooled(data: Any, compress: bool) -> Iterator[tuple[BinaryIO, int]]:
    """What the blob stores for ``data``, written to a temporary file (gzipped in pieces), and its length.

    The upload reads it back a block at a time, so the stored bytes are never all in memory beside the payload.
    """
    with tempfile.TemporaryFile() as spool:
        pack_into(spool, data, compress)
        length = spool.tell()
        spool.seek(0)
        yield spool, length


async def _blocks_of(spool: BinaryIO) -> AsyncIterator[bytes]:
    """The spooled file a block at a time, each read from a thread: no file I/O on the event loop."""
    while block := await asyncio.to_thread(spool.read, _BLOCK_BYTES):
        yield block


async def _write_blocks(blocks: AsyncIterator[bytes], spool: BinaryIO) -> None:
    """Write the downloaded blocks to the spool file, each from a thread."""
    async for block in blocks:
        await asyncio.to_thread(spool.write, block)


class BlobPayloadStore(PayloadStore):
    """Stores each payload as a blob ``<instance id>/<random id>`` in one container.

    Tokens are ``blob:v1:<container>:<blob name>``, the format of Microsoft's SDKs, so payloads stored by
    one SDK are read by the others.
    """

    def __init__(self, options: BlobPayloadStoreOptions) -> None:
        if not options.connection_string and not options.account_url:
            raise ValueError("BlobPayloadStoreOptions needs connection_string, or account_url with a credential")
        try:
            from azure.storage.blob import BlobServiceClient
            from azure.storage.blob.aio import BlobServiceClient as AsyncBlobServiceClient
        except ImportError as exc:
            raise ImportError(_MISSING_EXTRA) from exc
        self._options = options
        kwargs = _client_kwargs(options)
        if options.connection_string:
            self._sync = BlobServiceClient.from_connection_string(options.connection_string, **kwargs)
            self._async = AsyncBlobServiceClient.from_connection_string(options.connection_string, **kwargs)
        else:
            url, credential = options.account_url or "", options.credential
            self._sync = BlobServiceClient(account_url=url, credential=credential, **kwargs)
            self._async = AsyncBlobServiceClient(account_url=url, credential=credential, **kwargs)
        self._container_ready = False

    @property
    def options(self) -> BlobPayloadStoreOptions:
        return self._options

    # ---------------------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close the synchronous storage client."""
        self._sync.close()

    async def close_async(self) -> None:
        """Close the asyncio storage client."""
        await self._async.close()

    def __enter__(self) -> BlobPayloadStore:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    async def __aenter__(self) -> BlobPayloadStore:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.close_async()

    # ------------------------------------------------------------------------------------------- blobs

    def _new_name(self, instance_id: str | None) -> str:
        unique = uuid.uuid4().hex
        return f"{instance_id}/{unique}" if instance_id else unique

    #: ``upload`` takes any bytes-like object, so the helpers hand it a view instead of a copy; or the payload's
    #: text itself, which it encodes to UTF-8 in pieces as it writes it.
    reads_buffers = True
    reads_text = True

    # Making sure of the container meets an error (a missing container, or one created meanwhile) that the storage
    # client keeps in a reference cycle with its traceback. Raised on the upload's own stack, the traceback's frames
    # would reach back (``f_back``) to the upload's and its caller's, which hold the payload: alive after the upload
    # until Python's next cycle collection. So the container is made on a stack of its own (a thread; a task) that
    # holds no payload, where the error is also caught, and only on a store's first upload.

    def _ready_container(self) -> Any:
        container = self._sync.get_container_client(self._options.container_name)
        if not self._container_ready:
            failures: list[BaseException] = []
            maker = threading.Thread(target=_create_container, args=(container, failures), name="blob-container")
            maker.start()
            maker.join()
            if failures:
                raise failures[0]
            self._container_ready = True
        return container

    async def _ready_container_async(self) -> Any:
        container = self._async.get_container_client(self._options.container_name)
        if not self._container_ready:
            await asyncio.ensure_future(_create_container_async(container))
            self._container_ready = True
        return container

    def upload(self, data: bytes, *, instance_id: str | None = None) -> str:
        container = self._ready_container()
        name = self._new_name(instance_id)
        with _spooled(data, self._options.enable_compression) as (stored, length):
            container.upload_blob(name=name, data=stored, length=length, overwrite=True, max_concurrency=1)
        return make_token(self._options.container_name, name)

    async def upload_async(self, data: bytes, *, instance_id: str | None = None) -> str:
        container = await self._ready_container_async()
        name = self._new_name(instance_id)
        spooled = _spooled(data, self._options.enable_compression)
        stored, length = await asyncio.to_thread(spooled.__enter__)
        del data
        try:
            await container.upload_blob(
                name=name, data=_blocks_of(stored), length=length, overwrite=True, max_concurrency=1
            )
        finally:
            spooled.__exit__(None, None, None)
        return make_token(self._options.container_name, name)

    def download(self, token: str) -> bytes:
        container, name = parse_token(token)
        downloader = self._sync.get_container_client(container).download_blob(name, max_concurrency=1)
        with tempfile.TemporaryFile() as spool:  # fetched a block at a time, then gunzipped in pieces from the file
            downloader.readinto(spool)
            spool.seek(0)
            return unpack_from(spool)

    async def download_async(self, token: str) -> bytes:
        container, name = parse_token(token)
        stream = await self._async.get_container_client(container).download_blob(name, max_concurrency=1)
        with tempfile.TemporaryFile() as spool:
            await _write_blocks(stream.chunks(), spool)
            spool.seek(0)
            return await asyncio.to_thread(unpack_from, spool)

    def is_known_token(self, value: str) -> bool:
        if not value.startswith(TOKEN_PREFIX):  # every payload a walk meets is asked: keep the common case cheap
            return False
        try:
            parse_token(value)
        except ValueError:
            return False
        return True

    def delete_instance_payloads(self, instance_id: str) -> int:
        """Delete every blob stored for ``instance_id`` in the container; returns how many there were.

        Args:
            instance_id: The instance whose blobs (named ``<instance_id>/...``) to delete.
        """
        container = self._sync.get_container_client(self._options.container_name)
        names = [blob.name for blob in container.list_blobs(name_starts_with=f"{instance_id}/")]
        for name in names:
            container.delete_blob(name)
        return len(names)


def _create_container(container: Any, failures: list[BaseException]) -> None:
    """Creates the container unless it exists; an unexpected error is handed back in ``failures``."""
    from azure.core.exceptions import ResourceExistsError

    try:
        container.create_container()
    except ResourceExistsError:
        pass
    except BaseException as error:  # re-raised by the uploading thread
        failures.append(error)


async def _create_container_async(container: Any) -> None:
    from azure.core.exceptions import ResourceExistsError

    with contextlib.suppress(ResourceExistsError):
        await container.create_container()
