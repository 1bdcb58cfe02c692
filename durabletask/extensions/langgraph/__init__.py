"""LangGraph graphs run durably on DTS: every Pregel task an activity, every thread an orchestration.

Install with ``pip install 'dtscale[langgraph]'``. ``register_graph`` puts a compiled graph on a worker;
``DurableGraph`` runs it from a client with LangGraph's own ``invoke`` / ``stream`` / ``get_state`` API.
"""

from __future__ import annotations

from durabletask.extensions.langgraph._activity import heartbeat, idempotency_key
from durabletask.extensions.langgraph._client import DurableGraph
from durabletask.extensions.langgraph._errors import (
    GraphMismatchError,
    GraphNotRegisteredError,
    GraphRunError,
    GraphTimeoutError,
    LangGraphError,
    MissingThreadIdError,
    NodeFailedError,
    ResumeRejectedError,
    StateSerializationError,
)
from durabletask.extensions.langgraph._naming import activity_name, instance_id, orchestrator_name
from durabletask.extensions.langgraph._register import register_graph

__all__ = [
    "DurableGraph",
    "GraphMismatchError",
    "GraphNotRegisteredError",
    "GraphRunError",
    "GraphTimeoutError",
    "LangGraphError",
    "MissingThreadIdError",
    "NodeFailedError",
    "ResumeRejectedError",
    "StateSerializationError",
    "activity_name",
    "heartbeat",
    "idempotency_key",
    "instance_id",
    "orchestrator_name",
    "register_graph",
]
