"""Which resume a thread can take: the one rule the client (before sending) and the orchestrator (on arrival) apply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.types import Command

from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph._errors import ResumeRejectedError


def refuse_unwaited_resume(
    value: Any, checkpoint_id: Any, thread_id: str, pending: Callable[[], Sequence[str]]
) -> None:
    """Raises :class:`ResumeRejectedError` for a resume nothing waits for, or one naming interrupts not pending.

    ``pending`` gives the IDs of the thread's pending interrupts; it is called only for a resume. A resume from an
    earlier checkpoint (a fork) is LangGraph's business, and a dict whose keys are not interrupt IDs is a value.
    """
    if not isinstance(value, Command) or value.resume is None or checkpoint_id:
        return
    waiting = list(pending())
    if not waiting:
        raise ResumeRejectedError(f"thread '{thread_id}' has no pending interrupt to resume")
    resume = value.resume
    if isinstance(resume, dict) and resume and all(lg.is_xxh3_128_hexdigest(k) for k in resume):
        unknown = sorted(set(resume) - set(waiting))
        if unknown:
            raise ResumeRejectedError(
                f"thread '{thread_id}' has no pending interrupt with ID {', '.join(unknown)}; "
                f"pending: {', '.join(waiting)}"
            )
