"""What ``durabletask langgraph dev | serve | worker`` run once their arguments are checked."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from durabletask.extensions.langgraph._server.config import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    GraphSpecError,
    ProjectConfig,
    ServerSettings,
    apply_environment,
    load_config,
)
from durabletask.extensions.langgraph._server.launch import (
    Connection,
    dev_emulator,
    running_worker,
    serve_http,
    stop_event,
)
from durabletask.extensions.langgraph._server.launch_reload import Watcher, forget_project, watched_files
from durabletask.extensions.langgraph._server.store import check_store_index

T = TypeVar("T")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class LaunchError(Exception):
    """The project or the connection cannot be served; the message says why."""


def _project(args: argparse.Namespace) -> ProjectConfig:
    try:
        project = load_config(args.config)
        apply_environment(project)
        for spec in project.graphs.values():
            spec.load()  # an import error shows now, naming the graph, not at the first request
        check_store_index(project)  # so does a store.index.embed that cannot be loaded or gives the wrong shape
    except GraphSpecError as error:
        raise LaunchError(str(error)) from None
    return project


def _connection(args: argparse.Namespace) -> Connection:
    return Connection(
        endpoint=args.endpoint, taskhub=args.taskhub, token=args.token, connection_string=args.connection_string
    )


def _settings(args: argparse.Namespace, project: ProjectConfig, task_hub: str) -> ServerSettings:
    limit = args.max_body_bytes if args.max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    return ServerSettings(
        project=project,
        auth_token=args.auth_token,
        max_body_bytes=limit,
        task_hub=task_hub,
        host=args.host,
        idle_timeout=args.idle_timeout if args.idle_timeout is not None else DEFAULT_IDLE_TIMEOUT,
        body_timeout=args.body_timeout if args.body_timeout is not None else DEFAULT_BODY_TIMEOUT,
    )


def _announce(out: IO[str], what: str) -> None:
    out.write(what + "\n")
    out.flush()


async def _serve(
    args: argparse.Namespace,
    project: ProjectConfig,
    connection: Connection,
    out: IO[str],
    note: str,
    *,
    port: int | None = None,
    watch: list[Path] | None = None,
) -> _Served:
    """Serve until SIGTERM or Ctrl-C, or (with ``watch``) until one of those files changes."""
    stop = stop_event()
    settings = _settings(args, project, connection.task_hub)
    graphs = ", ".join(project.graphs)
    served = _Served()

    def ready(url: str) -> None:
        served.url = url
        _announce(out, f"LangGraph API on {url} (graphs: {graphs}){note}")
        if settings.auth_token is None and args.host not in LOOPBACK:
            sys.stderr.write(
                f"warning: serving on {args.host} without --auth-token: anyone who reaches it can run the graphs\n"
            )

    loop = asyncio.get_running_loop()

    def changed(_: Path) -> None:
        loop.call_soon_threadsafe(stop.set)

    watcher = Watcher(watch, changed).start() if watch else None
    try:
        await serve_http(
            project,
            settings,
            connection,
            host=args.host,
            port=args.port if port is None else port,
            ready=ready,
            stop=stop,
        )
    finally:
        if watcher is not None:
            watcher.stop()
            served.changed = watcher.changed
    return served


@dataclass
class _Served:
    url: str | None = None
    changed: Path | None = None


async def _until_stopped() -> None:
    await stop_event().wait()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _interrupt_on_sigterm() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def _run_loop(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``; its loop handles SIGTERM while it runs and resets it at its end, so it is set again."""
    try:
        return asyncio.run(main)
    finally:
        _interrupt_on_sigterm()


def _dev(args: argparse.Namespace, project: ProjectConfig, out: IO[str], before: set[str]) -> None:
    """``dev``: the emulator, the workers and the server; with reload, the workers and the server again, on the
    same port, each time the project changes."""
    data_dir = Path(args.data_dir) if args.data_dir else None
    port: int | None = None
    with dev_emulator(project, data_dir) as address:
        connection = Connection(endpoint=address)
        while True:
            with running_worker(project, connection, stop_grace=args.stop_grace):
                watch = None if args.no_reload else watched_files(project)
                served = _run_loop(
                    _serve(args, project, connection, out, f"; task hub on {address}", port=port, watch=watch)
                )
            if served.changed is None or watch is None:
                return
            _announce(out, f"{served.changed} changed: reloading the project")
            port = int(served.url.rsplit(":", 1)[1]) if served.url else port  # the same address as before
            project = _reload(args, project, before, watch)


def _reload(args: argparse.Namespace, project: ProjectConfig, before: set[str], watch: list[Path]) -> ProjectConfig:
    """The project loaded afresh; while it cannot load, the error is shown and its files watched until they change."""
    while True:
        forget_project(project, before)
        watcher = Watcher(watch)  # the files as they are before this attempt to load
        try:
            return _project(args)
        except LaunchError as error:
            sys.stderr.write(f"durabletask langgraph dev: {error}\nwaiting for a change to reload\n")
            sys.stderr.flush()
        watcher.start()
        try:
            while not watcher.seen.wait(0.5):  # short waits: Ctrl-C and SIGTERM interrupt them
                pass
        finally:
            watcher.stop()


def run(args: argparse.Namespace, out: IO[str]) -> int:
    """Run the chosen action until SIGTERM or Ctrl-C; returns the exit code.

    SIGTERM while starting or stopping (outside the server's loop, which handles it itself) stops the command as
    Ctrl-C does: what has started is stopped in order.
    """
    _interrupt_on_sigterm()
    environment = set(os.environ)  # the names the process had before the project's env: a reload unsets the others
    project = _project(args)
    action = args.langgraph_command
    try:
        if action == "serve":
            _run_loop(_serve(args, project, _connection(args), out, ""))
        elif action == "worker":
            connection = _connection(args)
            with running_worker(project, connection, stop_grace=args.stop_grace):
                _announce(out, f"LangGraph workers for {', '.join(project.graphs)} on {connection.task_hub}")
                _run_loop(_until_stopped())
        else:
            _dev(args, project, out, environment)
    except ValueError as error:  # a connection string or an option the SDK refuses
        raise LaunchError(str(error)) from None
    with contextlib.suppress(ValueError, OSError):
        out.flush()
    return 0
