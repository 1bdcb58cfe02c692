"""Runs a LangGraph parity case through one side (plain LangGraph or a DurableGraph) and records what it saw.

A :class:`Trace` holds, per turn, the invoke result (or the exception's type and message), the stream chunks
of each stream mode, the final ``get_state`` and the whole ``get_state_history``, and how many times each node
ran; all normalised so that two runs of the same graph compare equal: message IDs, interrupt IDs, checkpoint
IDs and times are left out, the rest is kept.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.types import Command, Interrupt, Send, StateSnapshot
from pydantic import BaseModel


class Tally:
    """How many times each node (and each scripted model call and tool) ran in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def hit(self, key: str) -> int:
        """Counts one run of ``key``; returns how many times it has run since the last reset."""
        with self._lock:
            self._counts[key] += 1
            return self._counts[key]

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


TALLY = Tally()


@dataclass(frozen=True)
class FromInterrupts:
    """A turn input made from the thread's pending interrupts (e.g. a resume map keyed by interrupt ID)."""

    make: Callable[[Sequence[Interrupt]], Any]


@dataclass(frozen=True)
class Case:
    """One corpus graph, the inputs of its turns on one thread, and how its runs are compared."""

    name: str
    build: Callable[..., Any]  # build(checkpointer=None) -> a compiled graph
    turns: tuple[Any, ...]
    stream_modes: tuple[str | tuple[str, ...], ...] = ("updates",)
    config: dict[str, Any] = field(default_factory=dict)
    parallel: bool = False  # tasks of one superstep finish in any order: chunks compare as multisets

    def __str__(self) -> str:
        return self.name


@dataclass
class Trace:
    """What one side did with a case, normalised."""

    outputs: list[Any] = field(default_factory=list)
    state: Any = None
    history: list[Any] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    streams: dict[str, list[list[Any]]] = field(default_factory=dict)
    stream_counts: dict[str, dict[str, int]] = field(default_factory=dict)


def thread_config(case: Case, thread_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id or f"{case.name}-{uuid.uuid4().hex[:8]}"}
    return {**case.config, "configurable": configurable}


def turn_input(app: Any, turn: Any, config: dict[str, Any]) -> Any:
    if isinstance(turn, FromInterrupts):
        return turn.make(app.get_state(config).interrupts)
    return turn


def run_invokes(case: Case, app: Any, trace: Trace) -> None:
    """Every turn through ``app.invoke`` on one new thread, then its state and history."""
    config = thread_config(case)
    TALLY.reset()
    for turn in case.turns:
        try:
            trace.outputs.append(norm(app.invoke(turn_input(app, turn, config), config)))
        except Exception as exc:
            trace.outputs.append(norm(exc))
    trace.counts = TALLY.snapshot()
    trace.state = snapshot(app.get_state(config))
    trace.history = [snapshot(s) for s in app.get_state_history(config)]


def run_streams(case: Case, app: Any, trace: Trace) -> None:
    """Every turn through ``app.stream`` on one new thread per stream mode."""
    for mode in case.stream_modes:
        config = thread_config(case)
        key = mode_key(mode)
        chunks: list[list[Any]] = []
        TALLY.reset()
        for turn in case.turns:
            seen: list[Any] = []
            try:
                stream_mode = list(mode) if isinstance(mode, tuple) else mode
                for chunk in app.stream(turn_input(app, turn, config), config, stream_mode=stream_mode):
                    seen.append(norm_chunk(mode, chunk))
            except Exception as exc:
                seen.append(norm(exc))
            chunks.append(seen)
        trace.streams[key] = chunks
        trace.stream_counts[key] = TALLY.snapshot()


def norm_chunk(mode: str | tuple[str, ...], chunk: Any) -> Any:
    """A stream chunk normalised; a ``messages`` chunk's metadata without its thread and task namespaces."""
    if isinstance(mode, tuple):
        name, payload = chunk
        return [name, norm_chunk(name, payload)]
    if mode == "messages":
        message, metadata = chunk
        kept = {k: v for k, v in metadata.items() if k != "thread_id" and not k.endswith("checkpoint_ns")}
        return [norm(message), norm(kept)]
    return norm(chunk)


def mode_key(mode: str | tuple[str, ...]) -> str:
    return mode if isinstance(mode, str) else "+".join(mode)


def run(case: Case, app: Any) -> Trace:
    trace = Trace()
    run_invokes(case, app, trace)
    run_streams(case, app, trace)
    return trace


def canon(chunks: Iterable[Any]) -> list[str]:
    """The chunks as sorted canonical JSON: how chunks of parallel tasks compare."""
    return sorted(json.dumps(c, sort_keys=True, default=repr) for c in chunks)


def snapshot(s: StateSnapshot) -> dict[str, Any]:
    return {
        "values": norm(s.values),
        "next": list(s.next),
        "step": s.metadata.get("step") if s.metadata else None,
        "source": s.metadata.get("source") if s.metadata else None,
        "has_parent": s.parent_config is not None,
        "tasks": [
            {
                "name": t.name,
                "path": norm(t.path),
                "error": norm(t.error),
                "interrupts": norm(t.interrupts),
                "result": norm(t.result),
                # A StateSnapshot of its own with get_state(subgraphs=True); else a config, or None.
                "subgraph": snapshot(t.state) if isinstance(t.state, StateSnapshot) else t.state is not None,
            }
            for t in s.tasks
        ],
        "interrupts": sorted_interrupts(s.interrupts),
    }


def sorted_interrupts(interrupts: Iterable[Any]) -> list[Any]:
    """Interrupts in a fixed order: parallel tasks raise theirs in any order, and their IDs differ per run."""
    return sorted((norm(i) for i in interrupts), key=lambda i: json.dumps(i, sort_keys=True, default=repr))


def norm(value: Any) -> Any:
    """``value`` as plain data with message and interrupt IDs left out."""
    if isinstance(value, BaseMessage):
        return {"message": norm(value.model_dump(exclude={"id"}))}
    if isinstance(value, Interrupt):
        return {"interrupt": norm(value.value)}
    if isinstance(value, Send):
        return {"send": value.node, "arg": norm(value.arg)}
    if isinstance(value, Command):
        parts = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"command": {k: norm(v) for k, v in parts.items() if v is not None}}
    if isinstance(value, BaseException):
        # A durable run's failure carries the original exception's qualified type name and message.
        kind = getattr(value, "error_type", None) or type(value).__name__
        return {"raised": kind.rsplit(".", 1)[-1], "message": getattr(value, "error_message", str(value))}
    if isinstance(value, BaseModel):
        return {"model": type(value).__name__, **norm(dict(value))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "dataclass": type(value).__name__,
            **{f.name: norm(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, dict):
        return {str(k): sorted_interrupts(v) if k == "__interrupt__" else norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    return value
