"""Functional-API ``@task`` calls inside their entrypoint's activity, with LangGraph's record of their results.

LangGraph runs each call as a task of its own and saves its result as that task's ``RETURN`` write, so an
entrypoint resumed after an interrupt gets the results of the calls it made before instead of making them
again. Here the calls run inline, one durable step per entrypoint call; their results go back to the
orchestrator as the same writes, under the same task ids, and come back with the entrypoint's next attempt.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class InlineCalls:
    """The ``CONFIG_KEY_CALL`` of an entrypoint's task.

    Args:
        task_id_of: The id LangGraph gives the call task of ``(func, input)`` (its next call index).
        saved: Results recorded by earlier attempts, by call task id.
        collect: Where stream chunks go.
        updates: Whether the run streams ``updates`` (each new call reports its result, as LangGraph's tasks do).
    """

    def __init__(
        self,
        task_id_of: Callable[[Any, Any], str],
        saved: dict[str, Any],
        collect: Callable[[Any], None],
        updates: bool,
    ) -> None:
        self.task_id_of = task_id_of
        self.saved = saved
        self.collect = collect
        self.updates = updates
        self.made: list[tuple[str, Any]] = []  # (call task id, result) of the calls this attempt ran

    def __call__(self, func: Any, input: tuple[tuple[Any, ...], dict[str, Any]], **options: Any) -> Future[Any]:
        if inspect.iscoroutinefunction(func):
            raise TypeError(
                f"@task '{getattr(func, '__name__', func)}' is async: durable functional-API workflows support "
                "sync @task functions only (they run inside the entrypoint's activity)"
            )
        done: Future[Any] = Future()
        call_id = self.task_id_of(func, input)
        if call_id in self.saved:
            done.set_result(self.saved[call_id])
            return done
        args, kwargs = input
        try:
            result = func(*args, **kwargs)
        except Exception as exc:  # handed to the caller through the future, as LangGraph's runner does
            done.set_exception(exc)
            return done
        self.made.append((call_id, result))
        if self.updates:
            self.collect(((), "updates", {getattr(func, "__name__", type(func).__name__): result}))
        done.set_result(result)
        return done
