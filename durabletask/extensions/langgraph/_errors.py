"""The errors of the LangGraph integration, all under the SDK's root error."""

from __future__ import annotations

import builtins
import functools
from typing import Any

from durabletask._errors import DurableTaskError


class LangGraphError(DurableTaskError):
    """Base class of the errors raised by ``durabletask.extensions.langgraph``."""


class GraphRunError(LangGraphError):
    """A graph run failed: a node raised, or LangGraph itself stopped the run (e.g. the recursion limit).

    Attributes:
        error_type: The type name of the original exception, e.g. ``"ValueError"`` or
            ``"langgraph.errors.GraphRecursionError"``.
        error_message: The original exception's message.
        instance_id: The thread's orchestration instance.
    """

    def __init__(self, error_type: str, error_message: str, instance_id: str) -> None:
        super().__init__(f"graph run on instance '{instance_id}' failed: {error_type}: {error_message}")
        self.error_type = error_type
        self.error_message = error_message
        self.instance_id = instance_id


class NodeFailedError(Exception):
    """A node's exception as the orchestrator sees it: a stand-in of the same type name, message and arguments.

    LangGraph's error handlers and the run's failure see this in place of the exception raised in the
    activity (whose object stays in the worker that ran the node). For a built-in exception type the stand-in
    is also an instance of it (a handler's ``isinstance(error, KeyError)`` holds); ``error_type`` is the
    original's qualified name.
    """

    error_type: str = ""


@functools.cache
def _failure_type(qualified: str) -> type[NodeFailedError]:
    # A subclass named after the node's exception, so the orchestration's failure details record the
    # original type (e.g. ``builtins.ValueError``) and error handlers see its name.
    module, _, name = qualified.rpartition(".")
    name = name or qualified
    attributes = {"error_type": qualified, "__module__": module or "builtins", "__qualname__": name}
    builtin = getattr(builtins, name, None) if module in ("", "builtins") else None
    if isinstance(builtin, type) and issubclass(builtin, Exception) and not issubclass(builtin, NodeFailedError):
        try:
            return type(name, (NodeFailedError, builtin), attributes)
        except TypeError:  # an incompatible instance layout (some OSError kinds): name only
            pass
    return type(name, (NodeFailedError,), attributes)


def node_failure(error: dict[str, Any]) -> NodeFailedError:
    """The stand-in for a node's exception described by ``error`` (``type``, ``message``, optional ``args``)."""
    cls = _failure_type(error["type"])
    if error.get("args") is not None:
        try:
            return cls(*error["args"])
        except Exception:  # a constructor that needs other arguments: the message will do
            return cls(error["message"])
    return cls(error["message"])


class ResumeRejectedError(LangGraphError, ValueError):
    """A ``Command(resume=...)`` that no pending interrupt can take; the thread keeps waiting."""


class GraphNotRegisteredError(LangGraphError, LookupError):
    """No worker serves the graph name (nothing picked the thread up before the timeout)."""


class GraphTimeoutError(LangGraphError, TimeoutError):
    """A request's result did not come within the ``timeout`` given to ``invoke`` / ``stream`` / ``ainvoke`` /
    ``astream``; the message says what it waited for. The request stays with the thread and may still run."""


class GraphMismatchError(LangGraphError, ValueError):
    """The client's graph differs from the one the workers run (nodes, edges or channels)."""


class StateSerializationError(LangGraphError, TypeError):
    """A value (input, state or a node's writes) that LangGraph's serializer cannot write."""


class MissingThreadIdError(LangGraphError, ValueError):
    """The config has no ``configurable.thread_id``; every durable run belongs to a thread."""
