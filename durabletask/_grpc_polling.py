"""The opt-in thread polling of gRPC clients: the threads that wait on calls read their connections themselves.

grpcio 1.85 reads and writes every client connection on its event engine's own threads and hands each
message over to the thread that waits for it. With its ``event_engine_client`` experiment off, the waiting
thread reads the socket itself, which saves that hand-over on every call a worker makes (bench/RESULTS.md,
2026-12-04).

gRPC reads ``GRPC_EXPERIMENTS`` once, while ``grpc`` is first imported, and the setting then holds for every
gRPC client of the process, not only the SDK's. So nothing here runs at import: :func:`enable` (public as
``durabletask.grpc_options.enable_thread_polling``) is called by the program's owner, and imports ``grpc`` at
once with the setting in the environment, restoring the environment right after so that child processes never
inherit it. It changes nothing when:

- ``GRPC_EXPERIMENTS`` is already set, even to an empty value (the environment chose);
- ``grpc`` was imported before the call (it has read its settings already: too late, and a warning says so);
- the installed grpcio is not a version this setting was verified on (:data:`VERIFIED_SERIES`), since a
  grpcio that no longer knows the experiment logs an error for it.

:func:`state` says which of these happened; ``durabletask doctor`` reports what a call would do
(:func:`in_a_new_program`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
import warnings
from enum import Enum

VARIABLE = "GRPC_EXPERIMENTS"
SETTING = "-event_engine_client"
#: grpcio release series on which the setting was measured and the test suite ran with it.
VERIFIED_SERIES = ("1.85.",)
_VERSION = re.compile(r"""__version__\s*=\s*["']+([^"']+)["']+""")


class ThreadPolling(Enum):
    """How gRPC clients poll in this process, as far as :func:`enable` is concerned."""

    NOT_REQUESTED = "grpc's default: durabletask.grpc_options.enable_thread_polling() was not called"
    APPLIED = "applied: client connections are read by the threads waiting on their calls"
    CHOSEN_BY_ENVIRONMENT = "left alone: GRPC_EXPERIMENTS was set by the environment"
    GRPC_ALREADY_IMPORTED = "not applied: grpc was imported before enable_thread_polling() was called"
    UNVERIFIED_GRPC = "left alone: the installed grpcio is not a version this was verified on"
    NO_GRPC = "left alone: grpc is not installed"


_state = ThreadPolling.NOT_REQUESTED
_lock = threading.Lock()


def state() -> ThreadPolling:
    """What :func:`enable` did in this process (``NOT_REQUESTED`` until it is called)."""
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


def installed_grpcio() -> str | None:
    """The version of the grpcio ``import grpc`` would load, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("grpc") if "grpc" not in sys.modules else sys.modules["grpc"].__spec__
    if spec is None or not spec.submodule_search_locations:
        return None
    return grpcio_version(spec.submodule_search_locations[0])


def in_a_new_program() -> ThreadPolling:
    """What :func:`enable` would do as the first thing of a program started with this environment.

    For ``durabletask doctor``, whose own process has imported grpc by the time it reports.
    """
    if VARIABLE in os.environ:
        return ThreadPolling.CHOSEN_BY_ENVIRONMENT
    if importlib.util.find_spec("grpc") is None:
        return ThreadPolling.NO_GRPC
    version = installed_grpcio()
    return ThreadPolling.APPLIED if version is not None and verified(version) else ThreadPolling.UNVERIFIED_GRPC


def enable() -> ThreadPolling:
    """Import grpc now with its client connections read by the threads waiting on the calls; see the module doc."""
    global _state
    with _lock:
        if _state is ThreadPolling.NOT_REQUESTED:
            _state = _apply()
        found = _state
    if found is ThreadPolling.GRPC_ALREADY_IMPORTED:
        warnings.warn(
            "durabletask.grpc_options.enable_thread_polling() was called after grpc was imported, so it changes "
            "nothing: gRPC reads its settings at its first import. Call it at the start of the program, before "
            "anything imports grpc (durabletask.client, durabletask.worker and most gRPC libraries do).",
            RuntimeWarning,
            stacklevel=3,
        )
    return found


def _apply() -> ThreadPolling:
    if VARIABLE not in os.environ and "grpc" in sys.modules:
        return ThreadPolling.GRPC_ALREADY_IMPORTED
    outcome = in_a_new_program()
    if outcome is not ThreadPolling.APPLIED:
        return outcome
    os.environ[VARIABLE] = SETTING
    try:
        importlib.import_module("grpc")
    finally:
        if os.environ.get(VARIABLE) == SETTING:
            del os.environ[VARIABLE]
    return ThreadPolling.APPLIED
