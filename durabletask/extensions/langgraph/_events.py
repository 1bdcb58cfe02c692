"""LangChain's ``astream_events`` (version ``v2``) of a run, made where each part of it runs.

The run's own chain (its start and its end) is the orchestrator's: :func:`chain_event` makes those two events from
the loop's input and final output. Everything inside a node (the node's chain, its models, tools, retrievers, custom
events, subgraphs) fires LangChain callbacks in the node's activity: :class:`NodeEvents` turns them into the same
events there, as chunks of mode ``events`` that travel like the ``custom`` and ``messages`` chunks. The activity
hands LangGraph a run manager standing for the run's chain (:func:`run_manager`), so a node's events name the run as
their parent, exactly as in-process LangGraph's do.

Events tagged ``langsmith:hidden`` (LangGraph's channel writes) are dropped where they are made: LangGraph's server
never sends them, and they would only weigh on the stream. A value inside an event that LangGraph's serializer cannot
write (a lock in a custom event's data, say) goes out as ``null``, as LangGraph's server sends what it cannot
encode, and the worker logs a warning naming where it was: the event still arrives, and the node's run goes on.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import CallbackManagerForChainRun
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import GenerationChunk
from langgraph.errors import EmptyInputError, GraphBubbleUp, InvalidUpdateError, TaskNotFound

from durabletask._errors import exception_message
from durabletask.extensions.langgraph import _internals as lg

#: The stream mode (and chunk mode) of these events.
EVENTS = "events"
#: Runs whose events LangGraph's server leaves out.
HIDDEN_TAG = "langsmith:hidden"
#: The metadata LangGraph's own stream adds to its run's callbacks.
INTEGRATION = {"ls_integration": "langgraph"}

T = TypeVar("T")
Event = dict[str, Any]
_LOG = logging.getLogger("durabletask.langgraph.events")
#: The exceptions whose message LangGraph's server writes; of any other, it writes only the type.
_DESCRIBED = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    RuntimeError,
    RecursionError,
    TimeoutError,
    InvalidUpdateError,
    GraphBubbleUp,
    EmptyInputError,
    TaskNotFound,
)


def writable(event: Event, check: Callable[[Any], Any]) -> Event:
    """``event`` with each value ``check`` refuses (raising) replaced by ``None``; a warning names what was."""
    dropped: list[str] = []
    inside: set[int] = set()  # the containers on the path: a value that holds itself is cut there

    def keep(value: Any, path: str) -> Any:
        if id(value) in inside:
            dropped.append(f"{path} (the value holding it)")
            return None
        try:
            check(value)
            return value
        except Exception:
            pass
        if isinstance(value, (dict, list, tuple)):
            inside.add(id(value))
            try:
                if isinstance(value, dict):
                    return {k: keep(v, f"{path}.{k}") for k, v in value.items()}
                return [keep(v, f"{path}[{i}]") for i, v in enumerate(value)]
            finally:
                inside.discard(id(value))
        dropped.append(f"{path} ({type(value).__module__}.{type(value).__qualname__})")
        return None

    kept: Event = {k: keep(v, k) for k, v in event.items()}
    _LOG.warning(
        "event %s of %r: what LangGraph's serializer cannot write is sent as null: %s",
        event.get("event"),
        event.get("name"),
        ", ".join(dropped),
    )
    return kept


def root_context(graph: Any, config: dict[str, Any], run_id: str) -> dict[str, Any]:
    """What the run's chain is to its callbacks: its ID, name, tags and metadata, as ``Pregel.stream`` starts it."""
    metadata = dict(config.get("metadata") or {})
    for key, value in INTEGRATION.items():
        metadata.setdefault(key, value)
    return {
        "run_id": str(_run_uuid(run_id)),
        "name": str(config.get("run_name") or graph.get_name()),
        "tags": list(config.get("tags") or []),
        "metadata": metadata,
    }


def chain_event(root: dict[str, Any], kind: str, value: Any) -> Event:
    """The run chain's ``on_chain_start`` (``kind="start"``, given the run's input) or ``on_chain_end`` (given its
    output: the run's own end leaves the input out, its start carries it)."""
    data = {"input": value} if kind == "start" else {"output": value}
    return {
        "event": f"on_chain_{kind}",
        "data": data,
        "name": root["name"],
        "tags": root["tags"],
        "run_id": root["run_id"],
        "metadata": root["metadata"],
        "parent_ids": [],
    }


def run_manager(root: dict[str, Any], handlers: Sequence[BaseCallbackHandler]) -> CallbackManagerForChainRun:
    """The run's chain as LangGraph's task preparation expects it: each node's callbacks are its children."""
    return CallbackManagerForChainRun(
        run_id=uuid.UUID(root["run_id"]),
        handlers=list(handlers),
        inheritable_handlers=list(handlers),
        tags=list(root["tags"]),
        inheritable_tags=list(root["tags"]),
        metadata=dict(root["metadata"]),
        inheritable_metadata=dict(root["metadata"]),
    )


def _run_uuid(run_id: str) -> uuid.UUID:
    """A run's ID as LangChain's run IDs are typed (an ID that is not a UUID is mapped to one, always the same)."""
    try:
        return uuid.UUID(run_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"durabletask-langgraph-run:{run_id}")


def _name(name: str | None, serialized: dict[str, Any] | None) -> str:
    if name is not None:
        return name
    if serialized:
        if "name" in serialized:
            return str(serialized["name"])
        if "id" in serialized:
            return str(serialized["id"][-1])
    return "Unnamed"


class NodeEvents(BaseCallbackHandler, lg.StreamingCallbackHandler[Any]):
    """A task's callbacks as ``astream_events`` v2 events, each handed to ``emit`` as it happens."""

    run_inline = True  # in the order the callbacks come, on the node's own thread

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self.emit = emit
        self.runs: dict[uuid.UUID, dict[str, Any]] = {}
        self.parents: dict[uuid.UUID, uuid.UUID | None] = {}
        self.tapped: dict[uuid.UUID, object] = {}
        self.lock = threading.RLock()  # sync code in executor threads and the node's loop both call in

    def __copy__(self) -> NodeEvents:
        return self

    def __deepcopy__(self, memo: Any = None) -> NodeEvents:
        return self

    def _parent_ids(self, run_id: uuid.UUID) -> list[str]:
        chain: list[str] = []
        while (parent := self.parents.get(run_id)) is not None:
            if str(parent) in chain:
                raise RuntimeError(f"run {parent} is its own ancestor in the callbacks' parents")
            chain.append(str(parent))
            run_id = parent
        return chain[::-1]

    def _send(self, event: str, run_id: uuid.UUID, info: dict[str, Any], data: Any) -> None:
        if HIDDEN_TAG in info["tags"]:
            return
        self.emit(
            {
                "event": event,
                "data": data,
                "run_id": str(run_id),
                "name": info["name"],
                "tags": info["tags"],
                "metadata": info["metadata"],
                "parent_ids": self._parent_ids(run_id),
            }
        )

    def _start(
        self, run_type: str, run_id: uuid.UUID, parent: uuid.UUID | None, name: str, kw: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        run = {
            "type": run_type,
            "name": name,
            "tags": list(kw.get("tags") or []),
            "metadata": dict(kw.get("metadata") or {}),
            **extra,
        }
        self.runs[run_id] = run
        self.parents[run_id] = parent
        return run

    # chains

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            run_type = kw.get("run_type") or "chain"
            extra = {} if inputs == {"input": ""} else {"inputs": inputs}  # LangChain's stand-in for "no input yet"
            run = self._start(run_type, run_id, parent_run_id, _name(kw.get("name"), serialized), kw, **extra)
            self._send(f"on_{run_type}_start", run_id, run, {"input": inputs} if extra else {})

    def on_chain_end(self, outputs: Any, *, run_id: uuid.UUID, inputs: Any = None, **kw: Any) -> None:
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is not None:
                data = {"output": outputs, "input": inputs or run.get("inputs") or {}}
                self._send(f"on_{run['type']}_end", run_id, run, data)

    def on_chain_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:  # version v2 sends nothing for a failed chain
            self.runs.pop(run_id, None)

    # models

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            inputs = {"messages": messages}
            name = _name(kw.get("name"), serialized)
            run = self._start("chat_model", run_id, parent_run_id, name, kw, inputs=inputs)
            self._send("on_chat_model_start", run_id, run, {"input": inputs})

    def on_llm_start(
        self, serialized: Any, prompts: Any, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            inputs = {"prompts": prompts}
            run = self._start("llm", run_id, parent_run_id, _name(kw.get("name"), serialized), kw, inputs=inputs)
            self._send("on_llm_start", run_id, run, {"input": inputs})

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            run = self.runs.get(run_id)
            if run is None or self.tapped.get(run_id):
                return
            if run["type"] == "chat_model":
                piece: Any = chunk.message if chunk is not None else AIMessageChunk(content=token)
                self._send("on_chat_model_stream", run_id, run, {"chunk": piece})
            else:
                piece = chunk if chunk is not None else GenerationChunk(text=token if isinstance(token, str) else "")
                self._send("on_llm_stream", run_id, run, {"chunk": piece})

    def on_llm_end(self, response: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is None:
                return
            if run["type"] == "chat_model":
                output: Any = next((g.message for gen in response.generations for g in gen[:1]), {})
                self._send("on_chat_model_end", run_id, run, {"output": output, "input": run.get("inputs")})
                return
            output = {
                "generations": [
                    [{"text": g.text, "generation_info": g.generation_info, "type": g.type} for g in gen]
                    for gen in response.generations
                ],
                "llm_output": response.llm_output,
            }
            self._send("on_llm_end", run_id, run, {"output": output, "input": run.get("inputs")})

    def on_llm_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            self.runs.pop(run_id, None)

    # tools, retrievers, custom events

    def on_tool_start(
        self, serialized: Any, input_str: str, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            inputs = kw.get("inputs")
            name = _name(kw.get("name"), serialized)
            call_id = kw.get("tool_call_id")
            run = self._start("tool", run_id, parent_run_id, name, kw, inputs=inputs, tool_call_id=call_id)
            self._send("on_tool_start", run_id, run, {"input": inputs or {}})

    def on_tool_end(self, output: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is not None:
                self._send("on_tool_end", run_id, run, {"output": output, "input": run.get("inputs")})

    def on_tool_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is None:
                return
            # the exception as LangGraph's server writes one: its type's name, and its message when it may be shown
            shown = {
                "error": type(error).__name__,
                "message": exception_message(error) if isinstance(error, _DESCRIBED) else "An internal error occurred",
            }
            call_id = kw.get("tool_call_id") or run.get("tool_call_id")
            data = {"error": shown, "input": run.get("inputs"), "tool_call_id": call_id}
            self._send("on_tool_error", run_id, run, data)

    def on_retriever_start(
        self, serialized: Any, query: str, *, run_id: uuid.UUID, parent_run_id: uuid.UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            inputs = {"query": query}
            name = _name(kw.get("name"), serialized)
            run = self._start("retriever", run_id, parent_run_id, name, kw, inputs=inputs)
            self._send("on_retriever_start", run_id, run, {"input": inputs})

    def on_retriever_end(self, documents: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is not None:
                self._send("on_retriever_end", run_id, run, {"output": documents, "input": run.get("inputs")})

    def on_retriever_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            self.runs.pop(run_id, None)

    def on_custom_event(self, name: str, data: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self.lock:
            info = {"name": name, "tags": list(kw.get("tags") or []), "metadata": dict(kw.get("metadata") or {})}
            self._send("on_custom_event", run_id, info, data)

    # a runnable's streamed output: on_<type>_stream, from the first tap of the run only

    def _tap(self, run_id: uuid.UUID) -> bool:
        """Whether this is the run's first tap (only the first one sends its chunks); its tokens stop here."""
        with self.lock:
            first = run_id not in self.tapped
            self.tapped.setdefault(run_id, True)
            return first

    def _chunk(self, run_id: uuid.UUID, run: dict[str, Any], chunk: Any) -> None:
        with self.lock:
            self._send(f"on_{run['type']}_stream", run_id, run, {"chunk": chunk})

    def tap_output_iter(self, run_id: uuid.UUID, output: Iterator[T]) -> Iterator[T]:
        first, run, seen = self._tap(run_id), None, False
        for chunk in output:
            if not seen:  # a run that has already ended by its first chunk streams nothing
                seen, run = True, self.runs.get(run_id) if first else None
            if run is not None:
                self._chunk(run_id, run, chunk)
            yield chunk

    async def tap_output_aiter(self, run_id: uuid.UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        first, run, seen = self._tap(run_id), None, False
        async for chunk in output:
            if not seen:
                seen, run = True, self.runs.get(run_id) if first else None
            if run is not None:
                self._chunk(run_id, run, chunk)
            yield chunk
