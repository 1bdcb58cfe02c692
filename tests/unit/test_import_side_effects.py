"""Importing the SDK changes nothing of the process it is imported into.

Each case runs in a fresh interpreter, which takes a snapshot of what a library could change process-wide (the
environment, grpc's settings, import machinery, signal handlers, logging, warnings, OpenTelemetry's global
providers, threads, exit hooks), imports, and takes it again. Third-party libraries that the SDK's modules import
are imported before the first snapshot where they would change something themselves, so the difference is the
SDK's own; where the SDK is imported before a library (OpenTelemetry's gRPC exporter, the Azure SDK), the result
is compared with the same library imported without the SDK.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import grpc_connect_trace
from tests.support.grpc_connect_trace import CONNECT, THREAD_POLLED, TRACE

ROOT = Path(__file__).resolve().parents[2]
listener = grpc_connect_trace.listener  # the fixture, for the tests below

PROBE = r"""
import asyncio, atexit, faulthandler, gc, json, logging, os, signal, socket, sys, threading, warnings


def _logger(logger):
    return {
        "level": logger.level,
        "handlers": [type(h).__name__ for h in logger.handlers],
        "propagate": logger.propagate,
        "disabled": logger.disabled,
    }


def _otel():
    found = {}
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None:
        found["tracer provider"] = repr(trace._TRACER_PROVIDER)
    propagate = sys.modules.get("opentelemetry.propagate")
    if propagate is not None:
        found["propagator"] = repr(propagate.get_global_textmap())
    metrics = sys.modules.get("opentelemetry.metrics._internal")
    if metrics is not None:
        found["meter provider"] = repr(metrics._METER_PROVIDER)
    logs = sys.modules.get("opentelemetry._logs._internal")
    if logs is not None:
        found["logger provider"] = repr(logs._LOGGER_PROVIDER)
    return found


def snapshot():
    manager = logging.Logger.manager
    return {
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
        "sys.path": list(sys.path),
        "meta_path": [repr(f) for f in sys.meta_path],
        "path_hooks": [repr(h) for h in sys.path_hooks],
        "signals": {s.name: repr(signal.getsignal(s)) for s in signal.valid_signals() if hasattr(s, "name")},
        "root logger": _logger(logging.getLogger()),
        "loggers": {n: _logger(l) for n, l in manager.loggerDict.items() if isinstance(l, logging.Logger)},
        "logging disabled": logging.root.manager.disable,
        "logger class": repr(logging.getLoggerClass()),
        "log record factory": repr(logging.getLogRecordFactory()),
        "warning filters": [repr(f) for f in warnings.filters],
        "showwarning": repr(warnings.showwarning),
        "excepthooks": [repr(sys.excepthook), repr(threading.excepthook), repr(sys.unraisablehook)],
        "displayhook": repr(sys.displayhook),
        "atexit callbacks": atexit._ncallbacks(),
        "threads": sorted(t.name for t in threading.enumerate()),
        "faulthandler": faulthandler.is_enabled(),
        "gc": [gc.isenabled(), gc.get_threshold()],
        "recursion limit": sys.getrecursionlimit(),
        "switch interval": sys.getswitchinterval(),
        "socket timeout": socket.getdefaulttimeout(),
        "asyncio policy": type(asyncio.get_event_loop_policy()).__name__,
        "opentelemetry": _otel(),
        "grpc imported": "grpc" in sys.modules,
    }


def run(before_imports, imports):
    import importlib
    for name in before_imports:
        importlib.import_module(name)
    before = snapshot()
    for name in imports:
        importlib.import_module(name)
    print(json.dumps({"before": before, "after": snapshot()}))


run(*json.loads(sys.argv[1]))
"""

#: The SDK's modules a program imports, public and behind the public ones.
SDK_MODULES = [
    "durabletask",
    "durabletask.client",
    "durabletask.worker",
    "durabletask.task",
    "durabletask.grpc_options",
    "durabletask.entities",
    "durabletask.serialization",
    "durabletask.scheduled",
    "durabletask.payload",
    "durabletask.testing",
    "durabletask.azuremanaged.client",
    "durabletask.azuremanaged.worker",
    "durabletask._tracing",
]
#: What the SDK's modules import and which changes things on its own import (grpc's threads, protobuf's pools,
#: the Azure and OpenTelemetry packages' loggers): imported before the first snapshot.
THIRD_PARTY = ["grpc", "grpc.aio", "google.protobuf", "azure.core", "azure.identity", "opentelemetry.trace"]


def _environ() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"GRPC_EXPERIMENTS", "GRPC_TRACE", "GRPC_VERBOSITY"}}
    environ["PYTHONPATH"] = str(ROOT)
    return environ


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env={**_environ(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def _probe(before_imports: list[str], imports: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    out = _python(PROBE, json.dumps([before_imports, imports])).stdout.strip().splitlines()[-1]
    found = json.loads(out)
    return found["before"], found["after"]


def _new_loggers_untouched(before: dict[str, Any], after: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Loggers the import made are plain ``getLogger`` ones (or as a third-party library alone makes them)."""
    plain = {"level": 0, "handlers": [], "propagate": True, "disabled": False}
    made = {name: state for name, state in after["loggers"].items() if name not in before["loggers"]}
    assert {name: state for name, state in made.items() if state != theirs.get(name, plain)} == {}


def _unchanged(
    before: dict[str, Any], after: dict[str, Any], *, skip: tuple[str, ...] = (), theirs: dict[str, Any] | None = None
) -> None:
    for key, value in before.items():
        if key in skip or key == "loggers":
            continue
        assert after[key] == value, key
    # Loggers that were there stay as they were.
    assert {n: after["loggers"][n] for n in before["loggers"]} == before["loggers"]
    _new_loggers_untouched(before, after, theirs or {})


def test_import_durabletask_changes_nothing_and_imports_no_grpc() -> None:
    before, after = _probe([], ["durabletask"])
    _unchanged(before, after)
    assert after["grpc imported"] is False


def test_importing_every_public_module_changes_nothing() -> None:
    before, after = _probe(THIRD_PARTY, SDK_MODULES)
    _unchanged(before, after)


def test_importing_the_sdk_before_grpc_changes_nothing_grpc_reads() -> None:
    # grpc is first imported by the SDK here: the environment it reads at that import is the process's own.
    before, after = _probe([], ["durabletask.client", "durabletask.worker"])
    _, grpc_alone = _probe([], ["grpc"])
    skip = ("threads", "atexit callbacks", "grpc imported")
    _unchanged(before, after, skip=skip, theirs=grpc_alone["loggers"])
    assert after["grpc imported"] is True
    assert {key: after[key] for key in skip} == {key: grpc_alone[key] for key in skip}


def _polls_with_threads(first: str, port: int) -> bool:
    return THREAD_POLLED in _python(first + "\n" + CONNECT.format(port=port), env=TRACE).stderr


def test_grpc_connects_as_it_does_without_the_sdk_when_the_sdk_is_imported_first(listener: int) -> None:
    alone = _polls_with_threads("", listener)
    assert _polls_with_threads("import durabletask.client, durabletask.worker", listener) == alone


def test_opentelemetry_s_grpc_exporter_imported_after_the_sdk_behaves_as_without_it(listener: int) -> None:
    exporter = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
    pytest.importorskip(exporter)
    _, without = _probe([], [exporter])
    _, with_sdk = _probe([], ["durabletask.client", "durabletask.worker", "durabletask._tracing", exporter])
    for key in ("environ", "opentelemetry", "signals", "warning filters", "excepthooks", "root logger"):
        assert with_sdk[key] == without[key], key
    opentelemetry = {n: s for n, s in without["loggers"].items() if n.startswith("opentelemetry")}
    assert {n: with_sdk["loggers"].get(n) for n in opentelemetry} == opentelemetry
    # Its channels connect the way grpc connects without the SDK.
    first = f"import {exporter}"
    assert _polls_with_threads(f"import durabletask.client\n{first}", listener) == _polls_with_threads(first, listener)


def test_the_azure_sdk_imported_after_the_sdk_behaves_as_without_it() -> None:
    azure = ["azure.core.pipeline", "azure.identity", "azure.storage.blob"]
    pytest.importorskip("azure.storage.blob")
    _, without = _probe([], azure)
    _, with_sdk = _probe([], ["durabletask.client", "durabletask.worker", "durabletask.azuremanaged.client", *azure])
    for key in ("environ", "opentelemetry", "signals", "warning filters", "excepthooks", "root logger", "sys.path"):
        assert with_sdk[key] == without[key], key
    loggers = {n: s for n, s in without["loggers"].items() if n.startswith("azure")}
    assert {n: with_sdk["loggers"].get(n) for n in loggers} == loggers
