"""A thread's runs as the protocol's events (``values``, ``messages``, ``lifecycle``, ``input.requested``, ...), no I/O.

The input is what a run streams (LangGraph's chunks, ``mode|ns`` by name, with the run's start, error and end); the
output is the protocol's ``{method, params: {namespace, timestamp, data}}`` bodies. Translation is deterministic: the
same chunks give the same events, so any server, reading a thread's durable stream again, numbers them the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from durabletask.extensions.langgraph._server.protocol_commands import Filter

Namespace = tuple[str, ...]

#: Stream modes a protocol run asks for (LangGraph's names; ``messages-tuple`` keeps each chunk's metadata).
RUN_MODES = ("values", "updates", "messages-tuple", "custom", "tasks", "checkpoints")
_PASSED = {"tasks": "tasks", "checkpoints": "checkpoints", "tools": "tools"}
_DIRECT = frozenset({"values", "updates", "messages", "tools", "lifecycle", "tasks", "checkpoints"})
#: What a run's failure says when it was cancelled (the SDK ends its iterators on ``failed``, not ``interrupted``).
CANCELLED = "the run was cancelled"


@dataclass(frozen=True)
class Part:
    """One thing a run streamed: ``kind`` is a stream mode, or ``run`` (its start), ``error`` or ``end``."""

    kind: str
    namespace: Namespace = ()
    data: Any = None


@dataclass(frozen=True)
class Body:
    """One protocol event before it is numbered: its method, namespace and data."""

    method: str
    namespace: Namespace
    data: Any


def part_of(event: str, data: Any) -> Part | None:
    """A run stream's SSE event (``values``, ``updates|ns1|ns2``, ``messages``, ``metadata``, ``error``, ``end``) as a
    :class:`Part`; ``None`` for events the protocol has no channel for (``debug``, ``events``, ...)."""
    mode, *ns = event.split("|")
    if mode == "metadata":
        return Part("run", (), data)
    if mode in ("error", "end"):
        return Part(mode, (), data)
    if mode in ("values", "updates", "custom", "messages", *_PASSED):
        return Part(mode, tuple(ns), data)
    return None


def infer_channel(method: str, data: Any) -> str | None:
    """The channel an event belongs to (``custom:<name>`` for a named custom event)."""
    if method in _DIRECT:
        return method
    if method == "input.requested":
        return "input"
    if method == "custom":
        name = data.get("name") if isinstance(data, Mapping) else None
        return f"custom:{name}" if isinstance(name, str) and name else "custom"
    return None


def _segment_matches(prefix: str, segment: str) -> bool:
    # ``node`` in a filter matches ``node:<task id>`` in an event; a filter segment with ``:`` must match exactly.
    return segment == prefix or (":" not in prefix and segment.partition(":")[0] == prefix)


def namespace_matches(ns: Namespace, prefixes: Iterable[Namespace] | None, depth: int | None) -> bool:
    """Whether ``ns`` lies under one of ``prefixes`` (all when ``None``), at most ``depth`` levels below it."""
    if prefixes is None:
        return depth is None or len(ns) <= depth
    for prefix in prefixes:
        if len(prefix) > len(ns) or not all(map(_segment_matches, prefix, ns)):
            continue
        if depth is None or len(ns) - len(prefix) <= depth:
            return True
    return False


def matches(body: Body, wanted: Filter) -> bool:
    """Whether a subscription with filter ``wanted`` receives the event."""
    channel = infer_channel(body.method, body.data)
    if channel is None:
        return False
    named = channel.startswith("custom:") and "custom" in wanted.channels
    if channel not in wanted.channels and not named:
        return False
    return namespace_matches(body.namespace, wanted.namespaces, wanted.depth)


def _message_fields(message: Any) -> dict[str, Any] | None:
    """A serialized LangChain message as a dict (LangGraph's ``messages`` mode sends ``[message, metadata]``)."""
    if isinstance(message, Mapping):
        return dict(message)
    return None


def _scalar_metadata(metadata: Any) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        return {}
    kept = {}
    for key, value in metadata.items():
        if isinstance(key, str) and (value is None or isinstance(value, (bool, int, float, str))):
            kept[key] = value
    return kept


@dataclass
class _Message:
    """A model's message while its chunks arrive: the wire index of each content block, and what it holds."""

    id: str
    blocks: dict[Any, int] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)


def _block_events(state: _Message, key: Any, kind: str, start: dict[str, Any], delta: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    index = state.blocks.get(key)
    if index is None:
        index = state.blocks[key] = len(state.blocks)
        state.kinds[index] = kind
        out.append({"event": "content-block-start", "index": index, "content": start})
    out.append({"event": "content-block-delta", "index": index, "delta": delta})
    return out


def _text_parts(content: Any) -> list[tuple[str, str]]:
    """``(kind, text)`` pieces of a chunk's content: a string, or a list of ``text`` / ``reasoning`` blocks."""
    if isinstance(content, str):
        return [("text", content)] if content else []
    pieces: list[tuple[str, str]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str) and block:
            pieces.append(("text", block))
        elif isinstance(block, Mapping) and block.get("type") in ("text", "reasoning"):
            kind = str(block["type"])
            value = block.get(kind) or block.get("text")
            if isinstance(value, str) and value:
                pieces.append((kind, value))
    return pieces


def _chunk_events(state: _Message, fields: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = []
    for kind, piece in _text_parts(fields.get("content")):
        start: dict[str, Any] = {"type": kind, kind: ""}
        out += _block_events(state, kind, kind, start, {"type": f"{kind}-delta", kind: piece})
        index = state.blocks[kind]
        state.text[index] = state.text.get(index, "") + piece
    for position, call in enumerate(fields.get("tool_call_chunks") or []):
        if not isinstance(call, Mapping):
            continue
        key = ("call", call.get("index", position))
        opening: dict[str, Any] = {"type": "tool_call_chunk", "id": call.get("id"), "name": call.get("name")}
        opening["args"] = ""
        out += _block_events(
            state, key, "tool_call", opening, {"type": "tool-call-delta", "args": call.get("args") or ""}
        )
        index = state.blocks[key]
        known = state.calls.setdefault(index, {"id": None, "name": None, "args": ""})
        known["id"] = known["id"] or call.get("id")
        known["name"] = known["name"] or call.get("name")
        known["args"] += call.get("args") or ""
    return out


def _finished_call(call: Mapping[str, Any]) -> dict[str, Any]:
    try:
        args = json.loads(call["args"]) if call["args"] else {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return {
            "type": "invalid_tool_call",
            "id": call["id"],
            "name": call["name"],
            "args": call["args"],
            "error": "the streamed arguments are not a JSON object",
        }
    return {"type": "tool_call", "id": call["id"] or "", "name": call["name"] or "", "args": args}


def _finish_events(state: _Message, usage: Any) -> list[Any]:
    out: list[Any] = []
    for index, kind in state.kinds.items():
        if kind == "tool_call":
            content = _finished_call(state.calls[index])
        else:
            content = {"type": kind, kind: state.text.get(index, "")}
        out.append({"event": "content-block-finish", "index": index, "content": content})
    finish: dict[str, Any] = {"event": "message-finish"}
    if isinstance(usage, Mapping):
        finish["usage"] = {k: v for k, v in usage.items() if k in ("input_tokens", "output_tokens", "total_tokens")}
    out.append(finish)
    return out


def _messages_of(update: Any) -> list[Mapping[str, Any]]:
    found = update.get("messages") if isinstance(update, Mapping) else None
    items = found if isinstance(found, list) else [found]
    return [item for item in items if isinstance(item, Mapping)]


def tool_events(update: Any) -> list[dict[str, Any]]:
    """The ``tools`` events a node's update shows: a tool call the model asked for starts (an AI message's
    ``tool_calls``), and its tool message finishes it (``tool-error`` when the message's status is ``error``)."""
    out: list[dict[str, Any]] = []
    for message in _messages_of(update):
        kind = message.get("type")
        if kind in ("ai", "AIMessageChunk"):
            for call in message.get("tool_calls") or []:
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    name = call.get("name") if isinstance(call.get("name"), str) else ""
                    data = {"event": "tool-started", "tool_call_id": call["id"], "tool_name": name}
                    out.append({**data, "input": call.get("args")})
        elif kind == "tool" and isinstance(message.get("tool_call_id"), str):
            ident = message["tool_call_id"]
            if message.get("status") == "error":
                out.append({"event": "tool-error", "tool_call_id": ident, "message": str(message.get("content"))})
            else:
                out.append({"event": "tool-finished", "tool_call_id": ident, "output": dict(message)})
    return out


def _interrupts(value: Any) -> list[dict[str, Any]]:
    """The interrupts a ``values`` or ``updates`` chunk carries under ``__interrupt__``, as ``{id, value}``."""
    found = value.get("__interrupt__") if isinstance(value, Mapping) else None
    items = found if isinstance(found, list) else []
    out = []
    for item in items:
        if isinstance(item, Mapping):
            ident = item.get("id", item.get("interrupt_id"))
            if isinstance(ident, str) and ident:
                out.append({"id": ident, "value": item.get("value")})
    return out


def _task_status(data: Mapping[str, Any]) -> str:
    return "interrupted" if data.get("interrupts") else "failed" if data.get("error") else "completed"


@dataclass
class _Subgraphs:
    """The subgraphs (child namespaces) a run's events have shown, so their ``lifecycle`` is told: ``started`` before
    a namespace's first event, its end when its parent's task result comes (or when the run ends)."""

    open: dict[Namespace, None] = field(default_factory=dict)

    def wrap(self, bodies: list[Body]) -> list[Body]:
        out: list[Body] = []
        for body in bodies:
            for depth in range(1, len(body.namespace) + 1):
                ns = body.namespace[:depth]
                if ns not in self.open:
                    self.open[ns] = None
                    out.append(Body("lifecycle", ns, {"event": "started", "graph_name": ns[-1].partition(":")[0]}))
            out.append(body)
            if body.method == "tasks" and isinstance(body.data, Mapping) and "result" in body.data:
                task = str(body.data.get("id"))
                ended = [ns for ns in self.open if ns[:-1] == body.namespace and ns[-1].partition(":")[2] == task]
                for ns in ended:
                    out += self.close(_task_status(body.data), under=ns)
        return out

    def close(self, event: str, under: Namespace = ()) -> list[Body]:
        """The end of every open subgraph at or below ``under``, the deepest first."""
        ended = sorted((ns for ns in self.open if ns[: len(under)] == under), key=len, reverse=True)
        for ns in ended:
            del self.open[ns]
        return [Body("lifecycle", ns, {"event": event}) for ns in ended]


@dataclass
class Translator:
    """The protocol's events of a thread's runs, one run after another, from the parts each run streamed.

    Feed parts in stream order; each call returns the events (unnumbered) they make. State lives per run: the run
    being read, the interrupts already announced, and the model messages still streaming.
    """

    run_id: str | None = None
    announced: set[str] = field(default_factory=set)
    failed: bool = False
    messages: dict[tuple[Namespace, str], _Message] = field(default_factory=dict)
    subgraphs: _Subgraphs = field(default_factory=_Subgraphs)

    def feed(self, part: Part) -> list[Body]:
        handler = getattr(self, f"_on_{part.kind}", None)
        if handler is None:
            kind = _PASSED.get(part.kind)
            return [] if kind is None else self.subgraphs.wrap([Body(kind, part.namespace, part.data)])
        out: list[Body] = handler(part)
        if part.kind in ("run", "error", "end"):
            return out
        return self.subgraphs.wrap(out)

    def _lifecycle(self, event: str, **extra: Any) -> Body:
        data: dict[str, Any] = {"event": event, **extra}
        if self.run_id is not None:
            data["run_id"] = self.run_id
        return Body("lifecycle", (), data)

    def _on_run(self, part: Part) -> list[Body]:
        info = part.data if isinstance(part.data, Mapping) else {}
        run_id = str(info["run_id"]) if info.get("run_id") is not None else None
        if run_id is None or run_id != self.run_id:
            self.announced, self.failed, self.subgraphs = set(), False, _Subgraphs()
        # A new attempt of the same run (its worker died) streams its model calls again, from their start.
        self.run_id, self.messages = run_id, {}
        attempt = info.get("attempt")
        extra = {"attempt": attempt} if isinstance(attempt, int) and not isinstance(attempt, bool) else {}
        return [self._lifecycle("running", **extra)]

    def _announce(self, ns: Namespace, value: Any) -> list[Body]:
        out = []
        for item in _interrupts(value):
            if item["id"] not in self.announced:
                self.announced.add(item["id"])
                data = {"interrupt_id": item["id"], "payload": item["value"], "value": item["value"]}
                out.append(Body("input.requested", ns, data))
        return out

    def _close_messages(self, under: Namespace = ()) -> list[Body]:
        """The end of the model messages still streaming in the graph at ``under`` or below it (a superstep of that
        graph has ended, so have its tasks' model calls)."""
        ending = [key for key in self.messages if key[0][: len(under)] == under]
        out = [Body("messages", key[0], event) for key in ending for event in _finish_events(self.messages[key], None)]
        for key in ending:
            del self.messages[key]
        return out

    def _on_values(self, part: Part) -> list[Body]:
        out = self._close_messages(part.namespace)
        values = part.data
        if isinstance(values, Mapping) and "__interrupt__" in values:
            values = {k: v for k, v in values.items() if k != "__interrupt__"}
        out.append(Body("values", part.namespace, values))
        return out + self._announce(part.namespace, part.data)

    def _on_updates(self, part: Part) -> list[Body]:
        out = self._close_messages(part.namespace)
        # The chunk as LangGraph's own ``stream_events(version="v3")`` passes it: ``{node: update}``.
        out.append(Body("updates", part.namespace, part.data))
        if isinstance(part.data, Mapping):
            for node, update in part.data.items():
                if node != "__interrupt__":
                    out += [Body("tools", part.namespace, data) for data in tool_events(update)]
        return out + self._announce(part.namespace, part.data)

    def _on_custom(self, part: Part) -> list[Body]:
        data = part.data if isinstance(part.data, Mapping) else {"payload": part.data}
        return [Body("custom", part.namespace, data)]

    def _on_messages(self, part: Part) -> list[Body]:
        pair = part.data if isinstance(part.data, (list, tuple)) and len(part.data) == 2 else None
        fields = _message_fields(pair[0]) if pair else None
        if pair is None or fields is None:
            return []
        metadata = _scalar_metadata(pair[1])
        kind = str(fields.get("type", ""))
        if kind == "AIMessageChunk":
            return self._chunk(part.namespace, fields, metadata)
        if kind == "ai" and ("ls_provider" in metadata or "ls_model_type" in metadata):
            # A model's whole answer (a call that did not stream); a node's returned messages name no model.
            state = _Message(str(fields.get("id") or metadata.get("run_id") or ""))
            start = {"event": "message-start", "role": "ai", "id": state.id, "metadata": metadata}
            events = [start, *_chunk_events(state, fields), *_finish_events(state, fields.get("usage_metadata"))]
            return [Body("messages", part.namespace, event) for event in events]
        return []

    def _chunk(self, ns: Namespace, fields: Mapping[str, Any], metadata: dict[str, Any]) -> list[Body]:
        ident = str(fields.get("id") or metadata.get("run_id") or "")
        key = (ns, ident)
        events: list[Any] = []
        state = self.messages.get(key)
        if state is None:
            state = self.messages[key] = _Message(ident)
            events.append({"event": "message-start", "role": "ai", "id": ident, "metadata": metadata})
        events += _chunk_events(state, fields)
        if fields.get("chunk_position") == "last":
            events += _finish_events(state, fields.get("usage_metadata"))
            del self.messages[key]
        return [Body("messages", ns, event) for event in events]

    def _on_error(self, part: Part) -> list[Body]:
        out = self._close_messages()
        info = part.data if isinstance(part.data, Mapping) else {}
        message = info.get("message") or info.get("error") or "the run failed"
        if not self.failed:
            self.failed = True
            out += self.subgraphs.close("failed")
            out.append(self._lifecycle("failed", error=str(message)))
        return out

    def _on_end(self, part: Part) -> list[Body]:
        """The run's end: ``data`` is its final status (``success``, ``error``, ``interrupted``, ...)."""
        out = self._close_messages()
        status = part.data.get("status") if isinstance(part.data, Mapping) else None
        if self.failed:
            end = None
        elif status in ("error", "timeout"):
            end = self._lifecycle("failed", error=f"the run ended with status {status}")
        elif status == "interrupted":
            end = self._lifecycle("failed", error=CANCELLED)
        else:
            end = self._lifecycle("interrupted" if self.announced else "completed")
        if end is not None:
            self.failed = end.data["event"] == "failed"
            out += [*self.subgraphs.close(end.data["event"]), end]
        self.run_id = None
        return out


def event(body: Body, seq: int, timestamp_ms: int) -> dict[str, Any]:
    """A numbered event as it goes on the wire: ``event_id`` is the SSE ``id`` (its ``seq``, as text)."""
    return {
        "type": "event",
        "event_id": str(seq),
        "seq": seq,
        "method": body.method,
        "params": {"namespace": list(body.namespace), "timestamp": timestamp_ms, "data": body.data},
    }
