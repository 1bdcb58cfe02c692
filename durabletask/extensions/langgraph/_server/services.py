"""The services the routes share: runs and threads, as interfaces the other route modules code against.

Values in and out are JSON-shaped (``dict``, ``list``, ``str``, ...) exactly as ``langgraph_sdk`` 0.4 reads them:
a run is the SDK's ``Run``, a thread its ``Thread``, a state its ``ThreadState``. Errors are
:class:`~durabletask.extensions.langgraph._server.errors.HttpError` (422 naming the field, 404, 409).

The implementations live in ``runs*.py`` / ``threads*.py`` / ``state*.py`` and are found on the context with
:func:`run_service` and :func:`thread_service`. This module only grows (new fields with defaults, new methods).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from durabletask.extensions.langgraph._server.context import ServerContext

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
IfNotExists = Literal["create", "reject"]
OnDisconnect = Literal["cancel", "continue"]
OnCompletion = Literal["delete", "keep"]
CancelAction = Literal["interrupt", "rollback"]
RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]

RUNS_KEY = "runs"
"""The key of the :class:`RunService` in ``ServerContext.extras``."""
THREADS_KEY = "threads"
"""The key of the :class:`ThreadService` in ``ServerContext.extras``."""
ASSISTANTS_KEY = "assistant_resolver"
"""The key of the :class:`AssistantResolver` in ``ServerContext.extras`` (set by the assistants module)."""


@dataclass(frozen=True)
class RunRequest:
    """What a run is created with: the body of ``POST /threads/{id}/runs[/stream|/wait]`` once validated.

    Attributes:
        assistant_id: An assistant ID or a graph ID of ``langgraph.json``.
        input: The graph's input (``None`` with a ``command`` or to continue from a checkpoint).
        command: A LangGraph ``Command`` as JSON: ``{"resume": ..., "update": ..., "goto": ...}``.
        config: The run's ``RunnableConfig`` (``configurable``, ``tags``, ``recursion_limit``).
        context: The run's runtime context (LangGraph's ``context=``).
        metadata: Metadata recorded on the run (and on the thread's checkpoints).
        stream_mode: The stream modes, LangGraph's names plus ``messages-tuple`` and ``events``.
        stream_subgraphs: Whether subgraphs' events are streamed (as ``mode|ns``).
        stream_resumable: Whether the events carry IDs (``id:`` lines) a client reconnects after.
        interrupt_before: Nodes (or ``"*"``) to interrupt before.
        interrupt_after: Nodes (or ``"*"``) to interrupt after.
        checkpoint: ``{"checkpoint_id": ..., "checkpoint_ns": ...}`` to run from (a fork), or ``None``.
        multitask_strategy: What to do when the thread has a run in progress.
        if_not_exists: What to do when the thread does not exist (``reject`` answers 404).
        on_disconnect: What a streaming run does when its client goes away.
        on_completion: A threadless run's thread is deleted (``delete``) or kept after the run.
        after_seconds: Delay before the run starts.
        durability: LangGraph's ``durability`` (accepted values only; every checkpoint is durable here).
        webhook: A URL POSTed the run when it ends, or ``None``.
    """

    assistant_id: str
    input: Any = None
    command: Mapping[str, Any] | None = None
    config: Mapping[str, Any] | None = None
    context: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    stream_mode: tuple[str, ...] = ("values",)
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    interrupt_before: Sequence[str] | Literal["*"] | None = None
    interrupt_after: Sequence[str] | Literal["*"] | None = None
    checkpoint: Mapping[str, Any] | None = None
    multitask_strategy: MultitaskStrategy = "enqueue"
    if_not_exists: IfNotExists = "reject"
    on_disconnect: OnDisconnect = "continue"
    on_completion: OnCompletion = "keep"
    after_seconds: float | None = None
    durability: str | None = None
    webhook: str | None = None


@dataclass(frozen=True)
class StreamEvent:
    """One event of a run's (or a thread's) stream.

    Attributes:
        id: A resumable ID, derived from the durable stream's position: any server resumes after it.
        event: The SSE event name: ``metadata``, ``values``, ``updates|ns``, ``messages/partial``, ``error``,
            ``end``, ...
        data: The event's JSON data.
    """

    id: str
    event: str
    data: Any


@dataclass(frozen=True)
class ResolvedAssistant:
    """An assistant resolved to what a run needs.

    Attributes:
        assistant_id: The assistant's ID (as reported in the run).
        graph_id: The graph of ``langgraph.json`` it runs.
        config: The assistant's config, merged under the run's.
        context: The assistant's context, merged under the run's.
    """

    assistant_id: str
    graph_id: str
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)


class AssistantResolver(Protocol):
    """Finds the graph (and defaults) an ``assistant_id`` of a run names; 404 when none."""

    async def resolve(self, assistant_id: str) -> ResolvedAssistant:
        """What a run on the assistant named by an assistant ID or a graph ID needs: its graph, config and
        context."""
        ...


class RunService(Protocol):
    """Runs on threads (or threadless), executed by the thread's orchestration.

    Every status a run goes through is recorded by the thread's orchestration (worker side), so a restarted
    server, or another one behind the same load balancer, reports the same.
    """

    async def create(self, thread_id: str | None, request: RunRequest) -> dict[str, Any]:
        """Starts a run and returns it (``Run``, status ``pending``), without waiting for it.

        ``thread_id=None`` makes a threadless run on a new thread (deleted after it with ``on_completion``
        ``delete``). Raises 404 for a missing thread under ``if_not_exists="reject"``, 409 for a busy thread
        under ``multitask_strategy="reject"`` (so, of such runs racing to an idle thread through any servers, all
        but one), 422 for a bad request.
        """
        ...

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """The run (``Run``); 404 when the thread or the run does not exist."""
        ...

    async def list(
        self, thread_id: str, *, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        ...

    async def delete(self, thread_id: str, run_id: str) -> None:
        """Removes a run that has ended (409 while it is pending or running)."""
        ...

    async def statuses(self, thread_id: str) -> dict[str, Any]:
        """The status of every run the thread's record names, by run ID: its runs, and the last runs deleted or
        forgotten (their events stay on the thread's stream). 404 when the thread does not exist."""
        ...

    async def cancel(
        self, thread_id: str, run_id: str, *, wait: bool = False, action: CancelAction = "interrupt"
    ) -> None:
        """Cancels a run: a pending one never starts, a running one ends (its heartbeating node sees it).

        ``action="rollback"`` also removes the run and what it wrote to the thread. ``wait`` returns once it ended.
        """
        ...

    async def cancel_many(
        self,
        *,
        thread_id: str | None = None,
        run_ids: Sequence[str] | None = None,
        status: Literal["pending", "running", "all"] | None = None,
        action: CancelAction = "interrupt",
    ) -> None:
        """``POST /runs/cancel``: the runs named, those of a thread, or every run with a status."""
        ...

    async def join(self, thread_id: str, run_id: str) -> Any:
        """Waits for the run's end and returns the thread's values then (or ``{"__error__": ...}`` when it failed)."""
        ...

    def stream(
        self,
        thread_id: str,
        run_id: str,
        *,
        last_event_id: str | None = None,
        stream_mode: Sequence[str] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The run's events after ``last_event_id`` (``None`` or ``"-1"``: from the start).

        Begins with ``metadata`` ``{run_id, attempt}`` when read from the start, ends with the run (its last
        ``values``/``error`` event, then ``end``). ``stream_mode`` narrows the run's own modes. A later ``metadata``
        event says a task of the run runs again (its ``attempt``).
        """
        ...

    def join_thread(
        self,
        thread_id: str,
        *,
        last_event_id: str | None = None,
        stream_mode: Sequence[str] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """``GET /threads/{id}/stream``: the events of the thread's runs, one run after another, until closed."""
        ...


class ThreadService(Protocol):
    """Threads: their records (metadata, status, values) and their state, read from the thread's orchestration."""

    async def create(
        self,
        *,
        thread_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
        supersteps: Sequence[Mapping[str, Any]] | None = None,
        graph_id: str | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Creates a thread (``Thread``); 409 when it exists under ``if_exists="raise"``."""
        ...

    async def get(self, thread_id: str) -> dict[str, Any]:
        """The thread (``Thread``: status, values, interrupts); 404 when missing."""
        ...

    async def update(
        self, thread_id: str, *, metadata: Mapping[str, Any] | None = None, ttl: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Merges metadata into the thread's; returns the thread."""
        ...

    async def delete(self, thread_id: str) -> None:
        """Deletes the thread, its runs and its state (404 when missing)."""
        ...

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        values: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        status: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
        select: Sequence[str] | None = None,
        extract: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Threads matching every filter given."""
        ...

    async def count(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        values: Mapping[str, Any] | None = None,
        status: str | None = None,
    ) -> int:
        """How many threads match."""
        ...

    async def copy(self, thread_id: str) -> dict[str, Any]:
        """A new thread with the thread's metadata and checkpoints; returns it."""
        ...

    async def prune(self, thread_ids: Sequence[str], *, strategy: Literal["delete", "keep_latest"]) -> int:
        """Deletes threads (or all but their latest checkpoint); returns how many were pruned."""
        ...

    async def get_state(
        self, thread_id: str, *, checkpoint: Mapping[str, Any] | None = None, subgraphs: bool = False
    ) -> dict[str, Any]:
        """The thread's state (``ThreadState``), now or at a checkpoint."""
        ...

    async def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None = None,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """LangGraph's ``update_state``; returns ``{"checkpoint": {...}}`` of the new checkpoint."""
        ...

    async def history(
        self,
        thread_id: str,
        *,
        limit: int = 10,
        before: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """The thread's states, newest first (``ThreadState`` each)."""
        ...


def run_service(ctx: ServerContext) -> RunService:
    """The context's run service (installed by the runs module's ``routes``)."""
    service: RunService = ctx.extras[RUNS_KEY]
    return service


def thread_service(ctx: ServerContext) -> ThreadService:
    """The context's thread service (installed by the threads module's ``routes``)."""
    service: ThreadService = ctx.extras[THREADS_KEY]
    return service
