"""Reading a server-sent event stream raw, with its IDs, for the run tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Frame:
    """One event as the wire carried it."""

    id: str | None
    event: str
    data: Any


async def read_frames(
    http: httpx.AsyncClient, method: str, path: str, **kwargs: Any
) -> tuple[httpx.Headers, list[Frame]]:
    """Every event of an SSE response, and its headers."""
    frames: list[Frame] = []
    async with http.stream(method, path, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        fields: dict[str, str] = {}
        async for line in response.aiter_lines():
            if line.startswith(":"):
                continue
            if not line:
                if "event" in fields:
                    frames.append(Frame(fields.get("id"), fields["event"], json.loads(fields.get("data", "null"))))
                fields = {}
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        return response.headers, frames
