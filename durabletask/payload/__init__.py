"""Large payloads kept outside the message: the store interface, its options and the message helpers.

A payload (input, output, event data, custom status, entity state) over ``threshold_bytes`` is stored in a
:class:`PayloadStore` and replaced on the wire by a token; the receiving side fetches it back. Pass a store as
``payload_store=`` to the clients and the worker. ``durabletask.extensions.azure_blob_payloads`` stores them in
Azure Blob Storage, :class:`FilePayloadStore` in a local folder.
"""

from durabletask.payload.file_store import FilePayloadStore as FilePayloadStore
from durabletask.payload.file_store import FilePayloadStoreOptions as FilePayloadStoreOptions
from durabletask.payload.helpers import PayloadStoreError as PayloadStoreError
from durabletask.payload.helpers import StoredPayloadTooLargeError as StoredPayloadTooLargeError
from durabletask.payload.helpers import (
    deexternalize_payloads,
    deexternalize_payloads_async,
    externalize_payloads,
    externalize_payloads_async,
)
from durabletask.payload.store import LargePayloadStorageOptions, PayloadStore

# Microsoft's list; our additions imported above (as themselves) are importable from here all the same.
__all__ = [
    "LargePayloadStorageOptions",
    "PayloadStore",
    "deexternalize_payloads",
    "deexternalize_payloads_async",
    "externalize_payloads",
    "externalize_payloads_async",
]
