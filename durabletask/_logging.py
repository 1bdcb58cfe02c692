"""The logger of a worker or client: a caller's logger, or a private one built from a handler and formatter."""

from __future__ import annotations

import inspect
import logging
import warnings

_DEFAULT_FORMAT = "%(asctime)s.%(msecs)03d %(name)s %(levelname)s: %(message)s"
_DEFAULT_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package.

    Constructors reach this through subclasses (the scheduler classes) and shared settings, so a fixed
    level would blame a line of ours instead of the application's.
    """
    level = 1
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "durabletask":
        level += 1
        frame = frame.f_back
    return level


def resolve_logger(
    name: str,
    log_handler: logging.Handler | None = None,
    log_formatter: logging.Formatter | None = None,
    logger: logging.Logger | None = None,
) -> logging.Logger:
    """The logger a client or worker writes to.

    A given ``logger`` is used as is and excludes ``log_handler``/``log_formatter`` (``ValueError``).
    Otherwise a logger private to this object is built (not registered with :mod:`logging`, so two
    workers never share or duplicate handlers), writing to ``log_handler`` (default: stderr at INFO)
    through ``log_formatter``. The handler and formatter keywords are deprecated.
    """
    if logger is not None:
        if log_handler is not None or log_formatter is not None:
            raise ValueError("'logger' cannot be combined with 'log_handler' or 'log_formatter'.")
        return logger
    if log_handler is not None or log_formatter is not None:
        warnings.warn(
            "'log_handler' and 'log_formatter' are deprecated; configure a logging.Logger and pass it "
            "as 'logger' instead.",
            DeprecationWarning,
            stacklevel=_caller_stacklevel(),
        )
    private = logging.Logger(name)
    handler = log_handler
    if handler is None:
        handler = logging.StreamHandler()
        handler.setLevel(logging.INFO)
    handler.setFormatter(log_formatter or logging.Formatter(_DEFAULT_FORMAT, datefmt=_DEFAULT_DATE_FORMAT))
    private.addHandler(handler)
    return private
