"""Uploads and downloads through a ``BlobPayloadStore`` built from ``account_url`` and azure-identity's
``AzureCliCredential``, sync and asyncio; run in a fresh interpreter (ours or Microsoft's peer) so the
environment the test sets (the ``az`` on PATH, the certificate to trust) is read from the start.

Usage: oauth_store.py ACCOUNT_URL CONTAINER [TOKEN_TO_READ]  -> prints one JSON line
"""

import asyncio
import json
import sys

from azure.identity import AzureCliCredential

from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions


def main() -> None:
    account_url, container = sys.argv[1:3]
    foreign = sys.argv[3] if len(sys.argv) > 3 else None
    options = BlobPayloadStoreOptions(
        account_url=account_url, credential=AzureCliCredential(), container_name=container
    )
    store = BlobPayloadStore(options)
    out: dict[str, object] = {}
    try:
        token = store.upload(b'"sync payload"', instance_id="oauth")
        out["token"] = token
        out["sync"] = store.download(token).decode()
        if foreign:
            out["foreign"] = store.download(foreign).decode()

        async def both_ways() -> str:
            async_token = await store.upload_async(b'"async payload"', instance_id="oauth")
            data = await store.download_async(async_token)
            await store.close_async()
            return data.decode()

        out["async"] = asyncio.run(both_ways())
    except Exception as exc:  # reported, so the test can compare both SDKs' errors
        out["error"] = f"{type(exc).__module__}.{type(exc).__name__}: {str(exc).splitlines()[0]}"
    finally:
        store.close()
    print(json.dumps(out), flush=True)


main()
