"""Running ``async def`` orchestrators: the coroutine is stepped by hand, and it may await only durable tasks."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import sys
from types import CoroutineType, FrameType
from typing import Any, NoReturn, Protocol

from durabletask._replay.failures import NonDeterminismError
from durabletask._replay.tasks import TASK_CLASSES, Task, is_task_class

# The running-loop slot is what asyncio itself reads to find "the" loop; the low-level helpers are the
# documented way for loop implementations to fill it.
_get_running_loop = asyncio.events._get_running_loop
_set_running_loop = asyncio.events._set_running_loop

_ADVICE = (
    "An orchestrator is replayed from its history, so it may await only durable tasks (ctx.call_activity, "
    "ctx.call_sub_orchestrator, ctx.create_timer, ctx.wait_for_external_event, ctx.call_entity, "
    "ctx.lock_entities, task.when_all, task.when_any). Move the I/O into an activity and await "
    "ctx.call_activity(...) instead; for a delay, await ctx.create_timer(...)."
)
_MAX_CHAIN = 8


class _Runtime(Protocol):
    """What the driver needs of the runtime context that owns it (kept structural: the runtime imports us)."""

    done: bool
    _current: Task[Any] | None

    def complete(self, result: Any) -> None: ...


class _EventLoopUsed(BaseException):
    """Raised where orchestrator code reaches for an event loop.

    A ``BaseException`` so that a broad ``except Exception`` in the orchestrator cannot swallow it and go
    on to do real I/O; the orchestration fails with a :class:`NonDeterminismError` either way.
    """


class _NoEventLoop:
    """Stands in for the running event loop while an orchestrator coroutine runs.

    asyncio's awaitables (sleep, futures, streams, tasks, and the HTTP clients built on them) ask for the
    running loop before they do anything. This stand-in refuses every use, so they fail at once, before any
    connection, callback or timer exists, instead of waiting on a loop that will never run them (or, on a
    thread whose loop is running, really running them there).
    """

    def __init__(self, orchestration: AsyncOrchestration) -> None:
        self._orchestration = orchestration

    def __getattr__(self, name: str) -> NoReturn:
        self._orchestration.refuse_loop(name, sys._getframe(1))


class AsyncOrchestration:
    """An ``async def`` orchestrator's coroutine, driven by the replay runtime as it drives a generator.

    :meth:`drive` sends the coroutine a result (or throws a failure in) and keeps going while the tasks it
    awaits are already complete, then leaves the runtime waiting on the pending one, or completes it with
    the coroutine's return value. Awaiting anything other than a durable task raises
    :class:`NonDeterminismError` naming what was awaited; the coroutine is then closed.

    The first step of a batch of events puts the stand-in loop in the thread's running-loop slot and
    :meth:`leave` (called by the runtime when the batch ends) puts the previous one back: swapping it per
    step would cost more than the rest of an await.
    """

    __slots__ = ("_coro", "_entered", "_loop", "_misuse", "_name", "_rt", "_saved")

    def __init__(self, rt: _Runtime, name: str, coro: CoroutineType[Any, Any, Any]) -> None:
        self._rt = rt
        self._name = name
        self._coro = coro
        # Typed as a loop: it takes the loop's place, and refuses to be one.
        self._loop: Any = _NoEventLoop(self)
        self._misuse: NonDeterminismError | None = None
        self._entered = False
        self._saved: Any = None

    def drive(self, value: Any, error: BaseException | None) -> None:
        """Resume the coroutine with ``value`` (or ``error``) and run it until it waits or ends."""
        if not self._entered:
            self._enter()
        coro, rt = self._coro, self._rt
        while True:
            try:
                awaited = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                self._ended()
                rt._current = None
                rt.complete(stop.value)
                return
            except _EventLoopUsed:
                awaited = None  # the misuse is already recorded, with where it happened
            except BaseException:
                self._ended()
                raise
            # The runtime's own task classes are known; anything else is checked (and remembered) once.
            durable = TASK_CLASSES.get(awaited.__class__)
            if durable is None:
                durable = is_task_class(awaited.__class__)
            if not durable or self._misuse is not None:
                raise self._refuse(awaited)
            rt._current = awaited
            if rt.done or not awaited._is_complete:
                return
            value, error = awaited._result, awaited._exception

    def leave(self) -> None:
        """Give the thread its own running loop (usually none) back; the next step takes it again."""
        if self._entered:
            self._entered = False
            saved, self._saved = self._saved, None
            _set_running_loop(saved)

    def _enter(self) -> None:
        self._saved = _get_running_loop()
        _set_running_loop(self._loop)
        self._entered = True

    def _ended(self) -> None:
        # The orchestrator returned or raised. If it swallowed a refused loop use on the way, that is still
        # the reason it fails.
        if self._misuse is not None:
            raise self._misuse from None

    def _refuse(self, awaited: Any) -> NonDeterminismError:
        if self._misuse is None:
            self._misuse = NonDeterminismError(self._describe_await(awaited))
        # Closing now runs the orchestrator's finally blocks here, under the stand-in loop, rather than
        # whenever the coroutine is garbage collected. What they raise cannot change the outcome.
        with contextlib.suppress(Exception, _EventLoopUsed):
            self._coro.close()
        return self._misuse

    # ---- messages ----------------------------------------------------------------------------
    def refuse_loop(self, attribute: str, frame: FrameType) -> NoReturn:
        """Called by the stand-in loop: record what reached for the loop, and stop it there."""
        if self._misuse is None:
            self._misuse = NonDeterminismError(self._describe_loop_use(attribute, frame))
        raise _EventLoopUsed(f"orchestrator '{self._name}' cannot use an event loop. {_ADVICE}")

    def _where(self) -> str:
        top = self._coro.cr_frame
        if top is None:
            return "?"
        return f"{os.path.basename(top.f_code.co_filename)}, line {top.f_lineno}"

    def _describe_loop_use(self, attribute: str, frame: FrameType) -> str:
        # Walk out from the frame that touched the loop to the orchestrator's own frame; the frame just
        # inside it is the call the orchestrator made.
        top = self._coro.cr_frame
        callee: FrameType | None = None
        current: FrameType | None = frame
        while current is not None and current is not top:
            callee, current = current, current.f_back
        if callee is None or current is None:
            what = f"orchestrator '{self._name}' used loop.{attribute} at {self._where()}"
            what += ", but orchestrators have no event loop"
        else:
            verb = "awaited" if callee.f_code.co_flags & inspect.CO_COROUTINE else "called"
            what = f"orchestrator '{self._name}' {verb} {_function(callee)} at {self._where()}"
            if callee is not frame:
                what += f", which reached {_function(frame)}"
            what += f": it needs an event loop (it asked for loop.{attribute}), and orchestrators have none"
        return f"{what}. {_ADVICE}"

    def _describe_await(self, yielded: Any) -> str:
        # The chain of coroutines the orchestrator is suspended in, outermost first.
        chain: list[str] = []
        awaited: Any = self._coro.cr_await
        while awaited is not None and len(chain) < _MAX_CHAIN:
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is None:
                break
            chain.append(_function(frame))
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
        if isinstance(yielded, asyncio.Future):
            thing = "an asyncio.Future (it completes only on its own event loop)"
        else:
            shown = repr(yielded)
            thing = shown if len(shown) <= 80 else shown[:77] + "..."
        if not chain:
            what = f"orchestrator '{self._name}' awaited {thing} at {self._where()}"
        else:
            what = f"orchestrator '{self._name}' awaited {chain[0]} at {self._where()}"
            if len(chain) > 1:
                what += f" (which awaits {' -> '.join(chain[1:])})"
            what += f", which yielded {thing}"
        return f"{what}; that is not a durable task. {_ADVICE}"


def _function(frame: FrameType) -> str:
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    module = frame.f_globals.get("__name__")
    return f"{module}.{name}()" if module else f"{name}()"
