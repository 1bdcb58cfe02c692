"""Export progress on the terminal: a tqdm bar when installed and on a terminal, else plain lines."""

from __future__ import annotations

import importlib
import time
from typing import IO, Any, Protocol

from durabletask._cli.export_run import Progress

# Plain lines come at most this often, so a long export logs a line every few seconds, not one per instance.
LINE_INTERVAL = 2.0


class Reporter(Protocol):
    def __call__(self, progress: Progress) -> None: ...

    def close(self) -> None: ...


def _text(p: Progress) -> str:
    of = f"/{p.total}" if p.total is not None else ""
    return f"exported {p.done}{of} ({p.exported_now} this run, {p.failed} failed)"


class LineReporter:
    """One line on the first instance, then at most one every ``LINE_INTERVAL`` seconds, and one at the end."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._last_at: float | None = None
        self._pending: Progress | None = None

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if self._last_at is not None and now - self._last_at < LINE_INTERVAL:
            self._pending = progress
            return
        self._write(progress, now)

    def _write(self, progress: Progress, now: float) -> None:
        self._stream.write(_text(progress) + "\n")
        self._stream.flush()
        self._last_at, self._pending = now, None

    def close(self) -> None:
        if self._pending is not None:
            self._write(self._pending, time.monotonic())


class BarReporter:
    """A tqdm progress bar (the ``progress`` extra), opened at the first instance, when the total is known."""

    def __init__(self, stream: IO[str], tqdm_class: Any) -> None:
        self._stream = stream
        self._tqdm = tqdm_class
        self._bar: Any = None
        self._shown = 0

    def __call__(self, progress: Progress) -> None:
        if self._bar is None:
            self._bar = self._tqdm(total=progress.total, file=self._stream, unit="inst", desc="exporting")
        self._bar.update(progress.done - self._shown)
        self._shown = progress.done
        self._bar.set_postfix(failed=progress.failed, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def reporter(stream: IO[str]) -> Reporter:
    """The best progress display ``stream`` supports: a bar needs tqdm and a terminal."""
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        try:
            tqdm_module = importlib.import_module("tqdm")
        except ImportError:
            pass
        else:
            return BarReporter(stream, tqdm_module.tqdm)
    return LineReporter(stream)
