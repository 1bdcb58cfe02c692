"""Every import of LangGraph's private modules (and LangChain's one), and the shim that makes its ids deterministic.

LangGraph is pinned to ``>=1.2,<1.3``; its private modules move between minor releases, so they are
reached from this module only and a LangGraph upgrade has one place to check.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone, tzinfo
from typing import Any

from langchain_core.tracers._streaming import _StreamingCallbackHandler as StreamingCallbackHandler
from langgraph._internal._config import ensure_config
from langgraph._internal._constants import (
    CONF,
    CONFIG_KEY_CALL,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_THREAD_ID,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    PREVIOUS,
    PULL,
    PUSH,
    RESUME,
    RETURN,
    TASKS,
)
from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base.id import uuid6
from langgraph.pregel._algo import Call, checkpoint_null_version, prepare_node_error_handler_task, prepare_single_task
from langgraph.pregel._checkpoint import channels_from_checkpoint, create_checkpoint
from langgraph.pregel._loop import SyncPregelLoop
from langgraph.pregel._messages import StreamMessagesHandler, ensure_message_ids
from langgraph.pregel._retry import _should_retry_on as should_retry_on
from langgraph.pregel._retry import arun_with_retry, run_with_retry
from langgraph.pregel._runner import PregelRunner
from langgraph.pregel._utils import is_xxh3_128_hexdigest
from langgraph.pregel._write import ChannelWrite

__all__ = [
    "CONF",
    "CONFIG_KEY_CALL",
    "CONFIG_KEY_CHECKPOINT_ID",
    "CONFIG_KEY_CHECKPOINT_NS",
    "CONFIG_KEY_RESUME_MAP",
    "CONFIG_KEY_RESUMING",
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_SCRATCHPAD",
    "CONFIG_KEY_STREAM",
    "CONFIG_KEY_THREAD_ID",
    "ERROR",
    "INTERRUPT",
    "NULL_TASK_ID",
    "PREVIOUS",
    "PULL",
    "PUSH",
    "RESUME",
    "RETURN",
    "TASKS",
    "Call",
    "ChannelWrite",
    "IdSource",
    "PregelRunner",
    "StreamMessagesHandler",
    "StreamingCallbackHandler",
    "SyncPregelLoop",
    "arun_with_retry",
    "channels_from_checkpoint",
    "checkpoint_null_version",
    "create_checkpoint",
    "deterministic_ids",
    "ensure_config",
    "ensure_message_ids",
    "install_id_shim",
    "is_async_only",
    "is_xxh3_128_hexdigest",
    "prepare_node_error_handler_task",
    "prepare_single_task",
    "run_with_retry",
    "should_retry_on",
]


def is_async_only(node: Any) -> bool:
    """Whether a graph node has only an ``async def`` function (LangGraph's sync API cannot run it)."""
    bound = getattr(node, "bound", None)
    return isinstance(bound, RunnableCallable) and bound.func is None and bound.afunc is not None


class IdSource:
    """Checkpoint and message ids drawn from a counter, so a replayed orchestration makes the same ones.

    Checkpoint ids keep LangGraph's rule that a later checkpoint has a greater id (savers find the latest
    by the greatest id): the counter fills the leading 48 bits, as uuid6 puts its timestamp there.
    """

    def __init__(self, salt: str, counter: int = 0, clock: Callable[[], datetime] | None = None) -> None:
        self.salt = salt
        self.counter = counter
        self.clock = clock  # checkpoint times: the orchestration's clock, the same on every replay
        self._tail = int.from_bytes(hashlib.blake2b(salt.encode(), digest_size=8).digest(), "big")

    def next_checkpoint_id(self) -> uuid.UUID:
        self.counter += 1
        # uuid6 layout: 48 ordering bits, version 6, 12 bits, variant 0b10, 62 bits
        value = (self.counter & (2**48 - 1)) << 80 | 0x6 << 76 | 0b10 << 62 | (self._tail & (2**62 - 1))
        return uuid.UUID(int=value)

    def next_message_id(self) -> uuid.UUID:
        self.counter += 1
        digest = hashlib.blake2b(f"{self.salt}|{self.counter}".encode(), digest_size=16).digest()
        return uuid.UUID(bytes=digest, version=4)


_ACTIVE: contextvars.ContextVar[IdSource | None] = contextvars.ContextVar("durabletask_langgraph_ids", default=None)
_INSTALL_LOCK = threading.Lock()
_installed = False


@contextmanager
def deterministic_ids(source: IdSource) -> Iterator[None]:
    """LangGraph code run inside takes its checkpoint and message ids from ``source``."""
    token = _ACTIVE.set(source)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _gated(original: Callable[..., uuid.UUID], pick: Callable[[IdSource], uuid.UUID]) -> Callable[..., uuid.UUID]:
    def make(*args: Any, **kwargs: Any) -> uuid.UUID:
        source = _ACTIVE.get()
        return original(*args, **kwargs) if source is None else pick(source)

    make.__wrapped__ = original  # type: ignore[attr-defined]
    return make


class _Datetime(datetime):
    """What ``langgraph.pregel._checkpoint`` sees as ``datetime``: ``now()`` from the active id source's clock."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        source = _ACTIVE.get()
        if source is None or source.clock is None:
            return datetime.now(tz)
        moment = source.clock()
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(tz) if tz is not None else moment.replace(tzinfo=None)


class _UuidModule:
    """What ``langgraph.graph.message`` sees as ``uuid``: the real module with a gated ``uuid4``."""

    def __init__(self, uuid4: Callable[..., uuid.UUID]) -> None:
        self.uuid4 = uuid4

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)


def install_id_shim() -> None:
    """Route LangGraph's uuid6 checkpoint ids, uuid4 message ids and checkpoint times through :func:`deterministic_ids`.

    Outside a ``deterministic_ids`` block (every other thread and caller) LangGraph behaves as before.
    Installed on first use by ``register_graph`` and ``DurableGraph``, never at import.
    """
    global _installed
    with _INSTALL_LOCK:
        if _installed:
            return
        import langgraph.graph.message as message_module
        import langgraph.pregel._checkpoint as checkpoint_module
        import langgraph.pregel._messages as messages_module

        # setattr: these are module globals LangGraph looks up at call time, replaced once per process
        setattr(checkpoint_module, "uuid6", _gated(uuid6, IdSource.next_checkpoint_id))  # noqa: B010
        setattr(checkpoint_module, "datetime", _Datetime)  # noqa: B010
        setattr(messages_module, "uuid4", _gated(uuid.uuid4, IdSource.next_message_id))  # noqa: B010
        setattr(message_module, "uuid", _UuidModule(_gated(uuid.uuid4, IdSource.next_message_id)))  # noqa: B010
        _installed = True
