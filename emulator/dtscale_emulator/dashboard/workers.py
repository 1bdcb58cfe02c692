"""Connected workers and pending backlog, asked of the backend through the worker-view protocol extension.

The published protocol cannot list workers; our emulator serves ``dtscale.WorkerView`` (described in
``durabletask._protocol_extensions``) for that. It is reached through the hub's own client channel, so it carries
the same ``taskhub`` metadata and credentials as every other call. A backend without it (managed DTS, the
public emulator) answers UNIMPLEMENTED, and the dashboard says the information is not available there.
"""

from __future__ import annotations

import json
from typing import Any

import grpc

from durabletask._client.async_client import AsyncTaskHubGrpcClient
from durabletask._protocol_extensions import WORKER_VIEW_METHOD, WORKER_VIEW_SERVICE

TIMEOUT = 10.0


def _parse(data: bytes) -> dict[str, Any]:
    found = json.loads(data)
    if not isinstance(found, dict) or not isinstance(found.get("workers"), list):
        raise ValueError("the backend's worker view is not the documented JSON object")
    return found


async def fetch(client: AsyncTaskHubGrpcClient) -> dict[str, Any] | None:
    """The hub's workers and backlog, or ``None`` when the backend does not offer the worker view."""
    client._get_stub()  # opens the client's channel (with its metadata and credentials) if not open yet
    channel = client._channel
    assert channel is not None
    call = channel.unary_unary(
        f"/{WORKER_VIEW_SERVICE}/{WORKER_VIEW_METHOD}",
        request_serializer=lambda value: value,
        response_deserializer=_parse,
    )
    try:
        result: dict[str, Any] = await call(b"", timeout=TIMEOUT)
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.UNIMPLEMENTED:
            return None
        raise
    return result
