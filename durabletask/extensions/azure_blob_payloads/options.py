"""Settings of the Azure blob payload store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from durabletask.payload.store import LargePayloadStorageOptions


@dataclass
class BlobPayloadStoreOptions(LargePayloadStorageOptions):
    """Where and how :class:`BlobPayloadStore` keeps payloads, besides the threshold and compression.

    Attributes:
        container_name: The blob container for payloads (created on first upload).
        connection_string: An Azure Storage connection string (Azurite's works too).
        account_url: The account's blob endpoint, used with ``credential`` instead of a connection string.
        credential: An ``azure-identity`` credential (e.g. ``DefaultAzureCredential()``) for ``account_url``.
        api_version: The storage service API version to speak (pin it for older Azurite releases).
        retry_total: How many times the storage client retries a failed request (its default when ``None``).
        delete_payloads_on_purge: Purging one instance through a client with this store also deletes the
            blobs stored for it (off by default, as other clients may still read them).
    """

    container_name: str = "durabletask-payloads"
    connection_string: str | None = None
    account_url: str | None = None
    credential: Any = field(default=None, repr=False)
    api_version: str | None = None
    retry_total: int | None = None
    delete_payloads_on_purge: bool = False
