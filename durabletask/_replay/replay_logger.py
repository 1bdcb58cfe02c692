"""The logger adapter an orchestrator gets from ``create_replay_safe_logger``: silent while it replays."""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from durabletask._replay import trace_ids

if TYPE_CHECKING:
    _LoggerAdapterBase = logging.LoggerAdapter[logging.Logger]
else:
    _LoggerAdapterBase = logging.LoggerAdapter


class ReplaySafeLogger(_LoggerAdapterBase):
    """A logger adapter that drops records while the orchestrator is replaying."""

    def __init__(self, logger: logging.Logger, is_replaying: Callable[[], bool]) -> None:
        super().__init__(logger, {})
        self._is_replaying = is_replaying

    def isEnabledFor(self, level: int) -> bool:
        """``False`` during replay, so messages are neither formatted nor emitted.

        Args:
            level: A logging level.
        """
        return not self._is_replaying() and self.logger.isEnabledFor(level)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        """Adds the orchestration's trace and span IDs (``otelTraceID``, ``otelSpanID``) when it is traced.

        Args:
            msg: The log message.
            kwargs: The logging call's keyword arguments.
        """
        msg, kwargs = super().process(msg, kwargs)
        ids = trace_ids.current()
        if ids is not None:
            kwargs["extra"] = {**(kwargs.get("extra") or {}), "otelTraceID": ids[0], "otelSpanID": ids[1]}
        return msg, kwargs
