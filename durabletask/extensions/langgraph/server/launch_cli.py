"""What ``durabletask langgraph dev | serve | worker`` run once their arguments are checked."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import IO

from durabletask.extensions.langgraph.server.config import (
    DEFAULT_MAX_BODY_BYTES,
    GraphSpecError,
    ProjectConfig,
    ServerSettings,
    apply_environment,
    load_config,
)
from durabletask.extensions.langgraph.server.launch import (
    Connection,
    dev_emulator,
    running_worker,
    serve_http,
    stop_event,
)


class LaunchError(Exception):
    """The project or the connection cannot be served; the message says why."""


def _project(args: argparse.Namespace) -> ProjectConfig:
    try:
        project = load_config(args.config)
        apply_environment(project)
        for spec in project.graphs.values():
            spec.load()  # an import error shows now, naming the graph, not at the first request
    except GraphSpecError as error:
        raise LaunchError(str(error)) from None
    return project


def _connection(args: argparse.Namespace) -> Connection:
    return Connection(
        endpoint=args.endpoint, taskhub=args.taskhub, token=args.token, connection_string=args.connection_string
    )


def _settings(args: argparse.Namespace, project: ProjectConfig, task_hub: str) -> ServerSettings:
    limit = args.max_body_bytes if args.max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    return ServerSettings(project=project, auth_token=args.auth_token, max_body_bytes=limit, task_hub=task_hub)


def _announce(out: IO[str], what: str) -> None:
    out.write(what + "\n")
    out.flush()


async def _serve(
    args: argparse.Namespace, project: ProjectConfig, connection: Connection, out: IO[str], note: str
) -> None:
    stop = stop_event()
    settings = _settings(args, project, connection.task_hub)
    graphs = ", ".join(project.graphs)

    def ready(url: str) -> None:
        _announce(out, f"LangGraph API on {url} (graphs: {graphs}){note}")

    await serve_http(project, settings, connection, host=args.host, port=args.port, ready=ready, stop=stop)


async def _until_stopped() -> None:
    await stop_event().wait()


def run(args: argparse.Namespace, out: IO[str]) -> int:
    """Run the chosen action until SIGTERM or Ctrl-C; returns the exit code."""
    project = _project(args)
    action = args.langgraph_command
    try:
        if action == "serve":
            asyncio.run(_serve(args, project, _connection(args), out, ""))
        elif action == "worker":
            connection = _connection(args)
            with running_worker(project, connection):
                _announce(out, f"LangGraph workers for {', '.join(project.graphs)} on {connection.task_hub}")
                asyncio.run(_until_stopped())
        else:
            data_dir = Path(args.data_dir) if args.data_dir else None
            with dev_emulator(project, data_dir) as address:
                connection = Connection(endpoint=address)
                with running_worker(project, connection):
                    asyncio.run(_serve(args, project, connection, out, f"; task hub on {address}"))
    except ValueError as error:  # a connection string or an option the SDK refuses
        raise LaunchError(str(error)) from None
    with contextlib.suppress(ValueError, OSError):
        out.flush()
    return 0
