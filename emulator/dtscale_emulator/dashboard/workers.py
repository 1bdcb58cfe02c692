"""Connected workers and pending backlog, asked of the backend through the worker-view protocol extension.

The published protocol cannot list workers; our emulator serves ``dtscale.WorkerView`` (described in
``dtscale_emulator.protocol.extensions``) for that. It is reached through the hub's own endpoint client, so it
carries the same ``taskhub`` metadata and credentials as every other call. A backend without it (managed DTS,
the public emulator) answers UNIMPLEMENTED, and the dashboard says the information is not available there.
"""

from __future__ import annotations

import json
from typing import Any

from dtscale_emulator.dashboard.endpoint import EndpointClient


def parse(data: bytes) -> dict[str, Any]:
    """The worker view's JSON; ``ValueError`` when it is not the documented object."""
    try:
        found = json.loads(data)
    except ValueError:
        raise ValueError("the backend's worker view is not JSON") from None
    if not isinstance(found, dict) or not isinstance(found.get("workers"), list):
        raise ValueError("the backend's worker view is not the documented JSON object")
    return found


async def fetch(client: EndpointClient) -> dict[str, Any] | None:
    """The hub's workers and backlog, or ``None`` when the backend does not offer the worker view."""
    data = await client.worker_view()
    return None if data is None else parse(data)
