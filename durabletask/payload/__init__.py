"""Large payloads kept outside the message: the store interface, its options and the message helpers.

A payload (input, output, event data, custom status, entity state) over ``threshold_bytes`` is stored in a
:class:`PayloadStore` and replaced on the wire by a token; the receiving side fetches it back. Pass a store as
``payload_store=`` to the clients and the worker. ``durabletask.extensions.azure_blob_payloads`` stores them in
Azure Blob Storage, :class:`FilePayloadStore` in a local folder.
"""

from durabletask.payload.file_store import FilePayloadStore, FilePayloadStoreOptions
from durabletask.payload.helpers import (
    PayloadStoreError,
    StoredPayloadTooLargeError,
    deexternalize_payloads,
    deexternalize_payloads_async,
    externalize_payloads,
    externalize_payloads_async,
)
from durabletask.payload.store import LargePayloadStorageOptions, PayloadStore

__all__ = [
    "FilePayloadStore",
    "FilePayloadStoreOptions",
    "LargePayloadStorageOptions",
    "PayloadStore",
    "PayloadStoreError",
    "StoredPayloadTooLargeError",
    "deexternalize_payloads",
    "deexternalize_payloads_async",
    "externalize_payloads",
    "externalize_payloads_async",
]
