"""Where orchestrator code made each durable call: a profile hook maps sequence IDs to the user's source lines.

It is installed only while a diverging history is replayed a second time (replay is deterministic, so the second
run makes the same calls), so a history that replays cleanly pays nothing for it.
"""

from __future__ import annotations

import inspect
import linecache
import os
import sys
import sysconfig
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Any

import durabletask
from durabletask._replay import entity_actions  # noqa: F401 - its action classes must exist for the scan below
from durabletask._replay.actions import PendingAction
from durabletask._replay.handlers import HandlerTable
from durabletask._replay_check.report import SourceLocation


def _folder(path: str) -> str:
    return str(Path(path).resolve()) + os.sep


# Frames from these folders are never the user's orchestrator code: the SDK's own, and the standard library's
# (a generator of the traceback module, say, that runs while the SDK records a failure), but not the packages
# installed under it, which may hold the application.
_SDK = _folder(os.path.dirname(durabletask.__file__))
_STDLIB = _folder(sysconfig.get_paths()["stdlib"])
_INSTALLED = tuple({_folder(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")})
# Generator and coroutine frames suspend (a profile "return" event) where the orchestrator waits.
_SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE
# Above this frame only the executor and its caller run: a call made with no user frame below it is the SDK's own
# (the next piece of a long timer, a retry's backoff timer).
_APPLY = HandlerTable.apply.__code__


def _action_constructors() -> frozenset[CodeType]:
    found: set[CodeType] = set()
    pending: list[type[Any]] = [PendingAction]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        init = cls.__dict__.get("__init__")
        if init is not None:
            found.add(init.__code__)
    return frozenset(found)


_CONSTRUCTORS = _action_constructors()
_not_user: dict[CodeType, bool] = {}


def is_library_code(code: CodeType) -> bool:
    """Whether ``code`` is the SDK's or the standard library's (and so never the user's orchestrator code)."""
    found = _not_user.get(code)
    if found is None:
        path = os.path.realpath(code.co_filename)
        found = path.startswith(_SDK) or (path.startswith(_STDLIB) and not path.startswith(_INSTALLED))
        _not_user[code] = found
    return found


def _shown_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith("..") else relative


def location_of(frame: FrameType) -> SourceLocation:
    """The source location a frame is at."""
    code = frame.f_code
    line = frame.f_lineno
    text = linecache.getline(code.co_filename, line).rstrip("\n") or None
    return SourceLocation(_shown_path(code.co_filename), line, getattr(code, "co_qualname", code.co_name), text)


def raised_at(error: BaseException) -> SourceLocation | None:
    """The innermost user frame of ``error``'s traceback: the orchestrator line that raised (or called what did)."""
    found: SourceLocation | None = None
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        if not is_library_code(tb.tb_frame.f_code):
            frame, line = tb.tb_frame, tb.tb_lineno
            code = frame.f_code
            text = linecache.getline(code.co_filename, line).rstrip("\n") or None
            found = SourceLocation(
                _shown_path(code.co_filename), line, getattr(code, "co_qualname", code.co_name), text
            )
        tb = tb.tb_next
    return found


class CallSites:
    """Records, while active, the user frame of each durable call and where the orchestrator last waited.

    Use as a context manager around one replay, on the thread that replays.
    """

    def __init__(self) -> None:
        #: Sequence ID -> the user line that made that call (first attempt, for a retried call).
        self.calls: dict[int, SourceLocation] = {}
        #: Where the orchestrator code last suspended (a ``yield`` or ``await`` of a durable task).
        self.waiting: SourceLocation | None = None
        self._resumed = True
        self._applying = 0  # how deep in HandlerTable.apply: the orchestrator runs only in there
        self._previous: Any = None

    def __enter__(self) -> CallSites:
        self._previous = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self._previous)

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is _APPLY:
            self._applying += 1 if event == "call" else -1 if event == "return" else 0
        elif event == "call":
            if code in _CONSTRUCTORS:
                self._record(frame)
            elif self._applying and not is_library_code(code):
                self._resumed = True
        elif event == "return" and self._suspends(code):
            self.waiting = location_of(frame)
            self._resumed = False

    def _suspends(self, code: CodeType) -> bool:
        # The first user generator or coroutine to suspend after user code ran is the innermost: where it waits.
        suspendable = bool(code.co_flags & _SUSPENDS)
        return self._resumed and self._applying > 0 and suspendable and not is_library_code(code)

    def _record(self, frame: FrameType) -> None:
        sequence_id = frame.f_locals.get("id")
        if not isinstance(sequence_id, int) or sequence_id in self.calls:
            return
        caller = frame.f_back
        while caller is not None and caller.f_code is not _APPLY:
            if not is_library_code(caller.f_code):
                self.calls[sequence_id] = location_of(caller)
                return
            caller = caller.f_back
