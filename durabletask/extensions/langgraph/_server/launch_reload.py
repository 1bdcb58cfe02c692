"""``dev``'s reload: when the project's code or configuration changes, the server and the workers stop in order,
the project is loaded afresh, and they start again (on the same port; the emulator goes on).

Watched: ``langgraph.json``, its ``.env`` file, and every module imported from the project's folder or its
dependency folders (the graphs and what they import). A new file does not count until something imports it. The
state is in the task hub's file, so a restart loses nothing; a run in flight goes on after it, on the new code.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from durabletask.extensions.langgraph._server.config import ProjectConfig

#: How often the files are looked at, in seconds.
POLL_INTERVAL = 1.0
_SKIPPED_PARTS = frozenset({"site-packages", "dist-packages", ".venv", "venv", "node_modules", "__pycache__"})
# This package and what it runs on are never the project's, wherever they are installed (an editable install
# sits in a source folder that could hold a project).
_NOT_THE_PROJECT = ("durabletask", "dtscale_emulator", "_dtscale_install_hook", "_dtscale_install_check")


def _project_modules(project: ProjectConfig) -> list[tuple[str, Path]]:
    """The modules imported from the project's folder or its dependency folders, with their files."""
    roots = [project.base_dir, *project.dependencies]
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py") or name.split(".")[0] in _NOT_THE_PROJECT:
            continue
        path = Path(file).resolve()
        if _under(path, roots) and not _under(path, prefixes) and not _SKIPPED_PARTS.intersection(path.parts):
            found.append((name, path))
    return found


def watched_files(project: ProjectConfig) -> list[Path]:
    """The files whose change restarts ``dev``: the configuration, and the project's imported modules."""
    files = {project.path}
    env_file = project.env_file
    if env_file is not None:
        files.add(env_file)
    files.update(path for _, path in _project_modules(project))
    return sorted(files)


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _stamps(files: Iterable[Path]) -> dict[Path, tuple[int, int] | None]:
    found: dict[Path, tuple[int, int] | None] = {}
    for file in files:
        try:
            info = file.stat()
            found[file] = (info.st_mtime_ns, info.st_size)
        except OSError:
            found[file] = None  # removed: a change too
    return found


class Watcher:
    """Calls ``on_change`` once, from its own thread, when a watched file changes (or goes away).

    Args:
        files: The files to watch (``watched_files``).
        on_change: Called with the changed file (``seen`` is set too).
        interval: Seconds between looks.
    """

    def __init__(
        self, files: Iterable[Path], on_change: Callable[[Path], None] | None = None, interval: float = POLL_INTERVAL
    ):
        self._files = list(files)
        self._on_change = on_change
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="langgraph-dev-reload", daemon=True)
        self.changed: Path | None = None
        self.seen = threading.Event()
        # Taken now, not when the thread first runs: a change made after the watcher exists is never missed.
        self._before = _stamps(self._files)

    def start(self) -> Watcher:
        """Start watching; returns ``self``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (without calling ``on_change``)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            now = _stamps(self._files)
            changed = next((file for file in self._files if now[file] != self._before[file]), None)
            if changed is not None:
                self.changed = changed
                self.seen.set()
                if self._on_change is not None:
                    self._on_change(changed)
                return


def forget_project(project: ProjectConfig, environment_before: Iterable[str]) -> None:
    """Forget what loading ``project`` did, so it loads afresh: its modules, and the variables its ``env`` set
    that the process did not have before (``environment_before``: the names it had)."""
    for name, _ in _project_modules(project):
        sys.modules.pop(name, None)
    kept = set(environment_before)
    for key in project.env:
        if key not in kept:
            os.environ.pop(key, None)
