"""What every route of the server shares: the hub's client, the graphs of ``langgraph.json`` and the settings.

The context holds no state of threads or runs: those live in the task hub, so servers are interchangeable.
Each route module adds the services it needs as fields here (one owner per field).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient
from durabletask.extensions.langgraph._server.config import GraphSpec, ServerSettings


@dataclass
class ServerContext:
    """The shared objects of one server process.

    Args:
        client: The asyncio client of the task hub.
        graphs: The graphs of ``langgraph.json`` by graph ID (see ``config.GraphSpec``: ``async with
            spec.open("threads.read") as graph`` gives the compiled graph, calling a factory as LangGraph does).
        settings: The server's settings (see ``config.ServerSettings``).
        extras: Services added by route modules at start-up, by name.
        stopping: Set when the server begins to stop (SIGTERM): a long answer (an event stream, a wait) should end
            now, without treating it as its client's disconnect; the server cuts what is still open after
            a short grace.
    """

    client: AsyncTaskHubGrpcClient
    graphs: Mapping[str, GraphSpec]
    settings: ServerSettings
    extras: dict[str, Any] = field(default_factory=dict)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
