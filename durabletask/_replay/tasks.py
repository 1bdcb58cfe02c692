"""Durable task objects that orchestrators yield: completable, cancellable, timer, retryable and composites."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar, cast

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import FailureDetails, TaskCancelledError, TaskFailedError, details_from_proto
from durabletask._replay.retry import RetryPolicy

T = TypeVar("T")
# A task only ever hands its result out, so a Task[bool] is a Task[object]: tasks with different result types
# can then go into one when_all/when_any list (typed by their common type).
T_co = TypeVar("T_co", covariant=True)
TLock = TypeVar("TLock", bound=AbstractContextManager[Any])


# Whether objects of a class are durable tasks, by class: cheaper per yield or await than an ABC isinstance check
# (a Python-level call per check). Filled as classes are met, by is_task_class().
TASK_CLASSES: dict[type, bool] = {}


def is_task_class(cls: type) -> bool:
    """Whether instances of ``cls`` are durable tasks (and remember it in :data:`TASK_CLASSES`)."""
    durable = TASK_CLASSES[cls] = issubclass(cls, Task)
    return durable


class _Observer(Protocol):
    def on_child_completed(self, task: Task[Any]) -> None: ...


class Task(ABC, Generic[T_co]):
    """Something an orchestrator can ``yield`` (or ``await``) and later receive a result (or an exception) from."""

    def __init__(self) -> None:
        self._is_complete = False
        self._result: Any = None
        self._exception: BaseException | None = None
        # Allocated on first use: most tasks never join a composite.
        self._observers: list[_Observer] | None = None

    @property
    def is_complete(self) -> bool:
        """Whether the task has finished, successfully or not."""
        return self._is_complete

    @property
    def is_failed(self) -> bool:
        """Whether the task finished with an exception."""
        return self._exception is not None

    @property
    def result(self) -> T_co:
        """The task's result (same as :meth:`get_result`)."""
        return self.get_result()

    def get_result(self) -> T_co:
        """The task's result; raises its exception if it failed, ``ValueError`` if still pending."""
        if not self._is_complete:
            raise ValueError("The task has not completed.")
        if self._exception is not None:
            raise self._exception
        return cast(T_co, self._result)

    def get_exception(self) -> TaskFailedError:
        """The exception the task failed with; ``ValueError`` if it did not fail."""
        if self._exception is None:
            raise ValueError("The task has not failed.")
        return cast(TaskFailedError, self._exception)

    def __await__(self) -> Generator[Task[T_co], Any, T_co]:
        # An ``async def`` orchestrator's await hands the task itself to the replay driver, exactly as a
        # generator's ``yield`` does; the driver sends the result back (or throws the failure in).
        return (yield self)  # type: ignore[no-any-return]

    def _observe(self, observer: _Observer) -> None:
        if self._observers is None:
            self._observers = [observer]
        else:
            self._observers.append(observer)

    def _forget(self, observer: _Observer) -> None:
        if self._observers is not None and observer in self._observers:
            self._observers.remove(observer)

    def _finish(self, result: Any, exception: BaseException | None) -> None:
        self._result = result
        self._exception = exception
        self._is_complete = True
        observers = self._observers
        if observers:
            self._observers = None
            for observer in observers:
                observer.on_child_completed(self)


class CompletableTask(Task[T_co]):
    """A task completed by the runtime when its history event arrives."""

    def __init__(self, expected_type: Any = None) -> None:
        # Task.__init__ inlined: a task is created per durable call, on every replay.
        self._is_complete = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._observers: list[_Observer] | None = None
        self._expected_type = expected_type

    def complete(self, result: T_co) -> None:  # type: ignore[misc]  # the runtime's call, not user code's
        """Complete the task with ``result``.

        Args:
            result: The task's result.

        Raises:
            ValueError: The task has already completed.
        """
        if self._is_complete:
            raise ValueError("The task has already completed.")
        # _finish(result, None) inlined: a task completes per replayed completion event. A pending task has no
        # exception to clear.
        self._result = result
        self._is_complete = True
        observers = self._observers
        if observers:
            self._observers = None
            for observer in observers:
                observer.on_child_completed(self)

    def fail(self, message: str, details: pb.TaskFailureDetails | BaseException) -> None:
        """Fail the task with a :class:`TaskFailedError` built from ``message`` and ``details``.

        Args:
            message: The error message.
            details: The failure as reported on the wire, or the exception that caused it.

        Raises:
            ValueError: The task has already completed.
        """
        if self._is_complete:
            raise ValueError("The task has already completed.")
        self._finish(None, TaskFailedError(message, details))

    def _fail_with(self, error: BaseException) -> None:
        if not self._is_complete:
            self._finish(None, error)


class LockTask(CompletableTask[TLock]):
    """A task whose result is a lock to hold as a context manager (``lock_entities``).

    In an ``async def`` orchestrator, ``async with task as lock:`` waits for the lock and holds it for the
    block, as ``with (yield task) as lock:`` does in a generator orchestrator.
    """

    async def __aenter__(self) -> TLock:
        lock = await self
        lock.__enter__()
        return lock

    async def __aexit__(
        self, error_type: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        cast(TLock, self._result).__exit__(error_type, error, traceback)


class CancellableTask(CompletableTask[T_co]):
    """A completable task that the orchestrator may cancel before it finishes."""

    def __init__(self, expected_type: Any = None) -> None:
        super().__init__(expected_type)
        self._is_cancelled = False
        self._cancel_handler: Callable[[], None] | None = None

    @property
    def is_cancelled(self) -> bool:
        """Whether :meth:`cancel` took effect."""
        return self._is_cancelled

    def set_cancel_handler(self, cancel_handler: Callable[[], None]) -> None:
        """Register what the runtime must undo when the task is cancelled.

        Args:
            cancel_handler: Called with no arguments when the task is cancelled.
        """
        self._cancel_handler = cancel_handler

    def cancel(self) -> bool:
        """Cancel the task; returns ``False`` if it had already completed."""
        if self._is_complete:
            return False
        if self._cancel_handler is not None:
            self._cancel_handler()
        self._is_cancelled = True
        self._finish(None, TaskCancelledError("The task was cancelled."))
        return True


class TimerTask(CancellableTask[None]):
    """A durable timer. Long timers are split into several history timers transparently."""

    def __init__(self, final_fire_at: datetime | None = None, maximum_timer_interval: timedelta | None = None) -> None:
        super().__init__()
        self._final_fire_at = final_fire_at
        self._maximum_timer_interval = maximum_timer_interval
        # The fire time of the history timer currently standing for this task.
        self._chunk_fire_at: datetime | None = final_fire_at

    @property
    def fire_at(self) -> datetime | None:
        """When the timer fires (naive UTC, on the orchestration clock)."""
        return self._final_fire_at

    def set_retryable_parent(self, retryable_task: RetryableTask[Any]) -> None:
        """Make ``retryable_task`` schedule its next attempt when this timer fires.

        Args:
            retryable_task: The call waiting for this timer.
        """
        self._observe(retryable_task)

    def _next_fire_at(self, now: datetime) -> datetime | None:
        """The next chunk's fire time after a chunk fired at ``now``, or ``None`` when it is over."""
        final = self._final_fire_at
        if final is None or now >= final:
            return None
        step = self._maximum_timer_interval
        if step is not None and step > timedelta(0) and now + step < final:
            return now + step
        return final


class RetryableTask(CompletableTask[T_co]):
    """An activity or sub-orchestration call that is retried with durable timers per a policy."""

    def __init__(
        self,
        retry_policy: RetryPolicy,
        action: Any = None,
        start_time: datetime | None = None,
        is_sub_orch: bool = False,
        expected_type: Any = None,
        *,
        reschedule: Callable[[RetryableTask[Any]], None] | None = None,
    ) -> None:
        # The positional parameters are Microsoft's; ``reschedule`` is how our runtime schedules an attempt.
        super().__init__(expected_type)
        self._retry_policy = retry_policy
        self._start_time = start_time if start_time is not None else datetime(1, 1, 1)
        self._is_sub_orch = is_sub_orch
        self._attempt_count = 1
        self._reschedule = reschedule
        # The call being retried, scheduled again for each new attempt.
        self._action: Any = action
        self._first_failure: pb.TaskFailureDetails | None = None
        self._timed_out = False

    @property
    def attempt_count(self) -> int:
        """How many attempts have been scheduled so far."""
        return self._attempt_count

    def compute_next_delay(
        self, failure: pb.TaskFailureDetails | None = None, now: datetime | None = None
    ) -> timedelta | None:
        """The delay before the next attempt, or ``None`` when the policy says stop.

        Args:
            failure: The failed attempt's details; a non-retriable failure stops the retries.
            now: When the attempt failed (orchestration time); the call's start time when ``None``.
        """
        if failure is not None and self._first_failure is None:
            self._first_failure = failure
        details: FailureDetails | None = details_from_proto(failure) if failure is not None else None
        self._timed_out = False
        if failure is not None and failure.isNonRetriable:
            return None
        now = now if now is not None else self._start_time
        policy = self._retry_policy
        self._timed_out = policy.retry_expired(self._attempt_count, self._start_time, now)
        return policy.next_delay(self._attempt_count, self._start_time, now, details)

    def failure_to_report(self, failure: pb.TaskFailureDetails) -> pb.TaskFailureDetails:
        """The failure the call ends with once no retry is made.

        When the retry timeout ends the retries, it is the first attempt's, as with Microsoft's SDK (which
        notices the timeout while replaying and so gives up at the first failure in the history).

        Args:
            failure: The last attempt's failure.
        """
        if self._timed_out and self._first_failure is not None:
            return self._first_failure
        return failure

    def increment_attempt_count(self) -> None:
        """Record that another attempt is being scheduled."""
        self._attempt_count += 1

    def on_child_completed(self, task: Task[Any]) -> None:
        """Called when the retry timer that waits out a backoff completes: schedules the next attempt of the call.

        Args:
            task: The retry timer that completed; a failed one (cancelled with the orchestration) schedules nothing.
        """
        if not self._is_complete and not task.is_failed and self._reschedule is not None:
            self.increment_attempt_count()
            self._reschedule(self)


class CompositeTask(Task[T]):
    """A task made of other tasks."""

    def __init__(self, tasks: Sequence[Task[Any]]) -> None:
        super().__init__()
        self._tasks = list(tasks)
        self._completed_tasks = 0
        self._failed_tasks = 0
        counts: dict[int, int] = {}
        unique: list[Task[Any]] = []
        for child in self._tasks:
            key = id(child)
            if key not in counts:
                counts[key] = 0
                unique.append(child)
            counts[key] += 1
        self._occurrences = counts
        for child in unique:
            if self._is_complete:
                break
            if child.is_complete:
                self.on_child_completed(child)
            else:
                child._observe(self)

    def get_tasks(self) -> list[Task[Any]]:
        """The child tasks, in the order given."""
        return self._tasks

    def _detach(self) -> None:
        for child in self._tasks:
            child._forget(self)

    @abstractmethod
    def on_child_completed(self, task: Task[Any]) -> None:
        """Called once per distinct child when it completes.

        Args:
            task: The child that completed (successfully or not).
        """


class WhenAllTask(CompositeTask[list[T]]):
    """Completes when every child has completed; fails with the first failure, after all finish."""

    def __init__(self, tasks: Sequence[Task[T]]) -> None:
        self._first_failure: BaseException | None = None
        super().__init__(tasks)
        if not self._tasks:
            self._finish([], None)

    @property
    def pending_tasks(self) -> int:
        """How many children have not completed yet."""
        return len(self._tasks) - self._completed_tasks

    def get_completed_tasks(self) -> int:
        """How many children have completed."""
        return self._completed_tasks

    def on_child_completed(self, task: Task[Any]) -> None:
        if self._is_complete:
            return
        count = self._occurrences.pop(id(task), 0)
        self._completed_tasks += count
        if task._exception is not None:
            self._failed_tasks += count
            if self._first_failure is None:
                self._first_failure = task._exception
        if self._completed_tasks == len(self._tasks):
            if self._first_failure is not None:
                self._finish(None, self._first_failure)
            else:
                self._finish([child._result for child in self._tasks], None)


class WhenAnyTask(CompositeTask[Task[T]]):
    """Completes with the first child to complete (successfully or not); the others keep running."""

    def __init__(self, tasks: Sequence[Task[T]]) -> None:
        super().__init__(tasks)

    def on_child_completed(self, task: Task[Any]) -> None:
        if not self._is_complete:
            self._detach()
            self._finish(task, None)


def when_all(tasks: Sequence[Task[T]]) -> WhenAllTask[T]:
    """A task that completes when all ``tasks`` complete, with their results in order.

    If any task fails, the first failure is raised once every task has finished.

    Args:
        tasks: The tasks to wait for (a task given twice counts twice).
    """
    return WhenAllTask(tasks)


def when_any(tasks: Sequence[Task[T]]) -> WhenAnyTask[T]:
    """A task that completes with the first of ``tasks`` to complete; the others are not cancelled.

    Args:
        tasks: The tasks to race.
    """
    return WhenAnyTask(tasks)
