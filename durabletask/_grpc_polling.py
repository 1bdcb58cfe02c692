"""Who reads this process's gRPC client connections: the threads that wait on the calls, unless told otherwise.

grpcio 1.85 reads and writes every client connection on its event engine's own threads and hands each
message over to the thread that waits for it. With its ``event_engine_client`` experiment off, the waiting
thread reads the socket itself, which saves that hand-over on every call a worker makes (bench/RESULTS.md,
2026-12-04).

gRPC reads ``GRPC_EXPERIMENTS`` once, while ``grpc`` is first imported. So :func:`arm` (run by
``import durabletask``) puts a finder on ``sys.meta_path`` that sets the variable for that one import and
restores the environment right after it, so that child processes never inherit it. Nothing is changed when:

- ``GRPC_EXPERIMENTS`` is already set, even to an empty value (the process's owner chose);
- ``grpc`` was imported before ``durabletask`` (it has read its settings already);
- the installed grpcio is not a version this setting was verified on (:data:`VERIFIED_SERIES`), since a
  grpcio that no longer knows the experiment logs an error for it.

:func:`state` says which of these happened.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from enum import Enum
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

VARIABLE = "GRPC_EXPERIMENTS"
SETTING = "-event_engine_client"
#: grpcio release series on which the setting was measured and the test suite ran with it.
VERIFIED_SERIES = ("1.85.",)
_VERSION = re.compile(r"""__version__\s*=\s*["']+([^"']+)["']+""")


class Polling(Enum):
    """What :func:`arm` did about how gRPC clients poll in this process."""

    NOT_ARMED = "not armed: durabletask has not been imported through its package"
    PENDING = "waiting for the first import of grpc"
    APPLIED = "applied: client connections are read by the threads waiting on their calls"
    CHOSEN_BY_ENVIRONMENT = "left alone: GRPC_EXPERIMENTS was set by the environment"
    GRPC_ALREADY_IMPORTED = "left alone: grpc was imported before durabletask"
    UNVERIFIED_GRPC = "left alone: the installed grpcio is not a version this was verified on"
    NO_GRPC = "left alone: grpc is not installed"


_state = Polling.NOT_ARMED


def state() -> Polling:
    """What happened to the polling setting in this process so far."""
    return _state


def verified(version: str) -> bool:
    """Whether the setting is known to work on grpcio ``version``."""
    return version.startswith(VERIFIED_SERIES)


def grpcio_version(package_dir: str) -> str | None:
    """The version of the grpcio whose ``grpc`` package is in ``package_dir``, read without importing it."""
    try:
        with open(os.path.join(package_dir, "_grpcio_metadata.py"), encoding="utf-8") as file:
            found = _VERSION.search(file.read())
    except OSError:
        return None
    return found.group(1) if found else None


class _SetWhileImporting:
    """The ``grpc`` package's own loader, run with the setting in the environment and then put back in place."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        result: ModuleType | None = self._inner.create_module(spec)
        return result

    def exec_module(self, module: ModuleType) -> None:
        global _state
        os.environ[VARIABLE] = SETTING
        try:
            self._inner.exec_module(module)
            _state = Polling.APPLIED
        finally:
            if os.environ.get(VARIABLE) == SETTING:
                del os.environ[VARIABLE]
            # Nothing after this import sees the wrapper: resources and reloads use grpc's own loader.
            module.__loader__ = self._inner
            if module.__spec__ is not None:
                module.__spec__.loader = self._inner


class _FirstGrpcImportFinder:
    """Wraps the loader of the first ``import grpc``, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        global _state
        if fullname != "grpc" or path is not None:
            return None
        disarm()
        spec = importlib.util.find_spec(fullname)  # through the finders after this one, now that it has left
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            _state = Polling.NO_GRPC
            return spec
        if VARIABLE in os.environ:
            _state = Polling.CHOSEN_BY_ENVIRONMENT
            return spec
        version = grpcio_version(spec.submodule_search_locations[0])
        if version is None or not verified(version):
            _state = Polling.UNVERIFIED_GRPC
            return spec
        spec.loader = _SetWhileImporting(spec.loader)  # type: ignore[assignment]
        return spec


_FINDER = _FirstGrpcImportFinder()


def arm() -> None:
    """Set the polling up for this process's first ``import grpc``; once per process, from ``import durabletask``."""
    global _state
    if _state is not Polling.NOT_ARMED:
        return
    if "grpc" in sys.modules:
        _state = Polling.GRPC_ALREADY_IMPORTED
        return
    if VARIABLE in os.environ:
        _state = Polling.CHOSEN_BY_ENVIRONMENT
        return
    _state = Polling.PENDING
    sys.meta_path.insert(0, _FINDER)


def disarm() -> None:
    """Take the finder off ``sys.meta_path``."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
