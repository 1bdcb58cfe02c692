"""Large payloads in Azure Blob Storage: ``pip install 'dtscale[azure-blob]'``.

```python
store = BlobPayloadStore(BlobPayloadStoreOptions(connection_string="..."))
worker = TaskHubGrpcWorker(host_address=..., payload_store=store)
client = TaskHubGrpcClient(host_address=..., payload_store=store)
```

``azure-storage-blob`` is imported when a store is built, so this module imports without the extra.
"""

from durabletask.extensions.azure_blob_payloads.blob_payload_store import BlobPayloadStore
from durabletask.extensions.azure_blob_payloads.options import BlobPayloadStoreOptions

__all__ = ["BlobPayloadStore", "BlobPayloadStoreOptions"]
