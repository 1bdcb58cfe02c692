"""Entry point: parse, connect, run one command, and turn failures into clear messages and exit codes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import IO

import grpc

from durabletask import client as dt_client
from durabletask._cli.arguments import UsageError
from durabletask._cli.commands.dashboard import cmd_dashboard
from durabletask._cli.commands.doctor import cmd_doctor
from durabletask._cli.commands.entities import cmd_entity
from durabletask._cli.commands.export import cmd_export, cmd_history_from_export
from durabletask._cli.commands.follow import cmd_follow
from durabletask._cli.commands.instances import COMMANDS, Handler
from durabletask._cli.commands.langgraph import cmd_langgraph
from durabletask._cli.commands.replay_check import cmd_replay_check
from durabletask._cli.commands.schedules import COMMAND_NAMES as SCHEDULE_COMMANDS
from durabletask._cli.commands.schedules import cmd_schedules
from durabletask._cli.parser import build_parser
from durabletask._cli.render import Renderer
from durabletask._errors import DurableTaskError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _connect(
    endpoint: str, taskhub: str, token: str | None, connection_string: str | None = None
) -> dt_client.TaskHubGrpcClient:
    # The clients' default logger prints a line per call to stderr; a command prints only its result or error.
    quiet = logging.getLogger("durabletask.cli")
    if connection_string:
        from durabletask.azuremanaged.client import DurableTaskSchedulerClient

        return DurableTaskSchedulerClient.from_connection_string(connection_string, logger=quiet)
    metadata = [("taskhub", taskhub)]
    if token:
        metadata.append(("authorization", f"Bearer {token}"))
    secure = endpoint.startswith(("https://", "grpcs://"))
    return dt_client.TaskHubGrpcClient(host_address=endpoint, metadata=metadata, secure_channel=secure, logger=quiet)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.RpcError):
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        name = code.name if code is not None else "ERROR"
        return f"{name}: {details}"
    return str(exc) or type(exc).__name__


# Commands that connect themselves (dashboard, langgraph) or need no connection (doctor inspects this environment).
_STANDALONE = {"dashboard": cmd_dashboard, "doctor": cmd_doctor, "langgraph": cmd_langgraph}


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Runs the ``durabletask`` command line; returns the process exit code."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    standalone = _STANDALONE.get(args.command)
    if standalone is not None:
        return standalone(args, out, err)
    if args.command == "history" and args.from_export:
        return cmd_history_from_export(args, out, err)  # a file: no connection needed
    renderer = Renderer(out, as_json=args.json)
    handler: Handler
    if args.command in SCHEDULE_COMMANDS:
        handler = cmd_schedules
    elif args.command == "export":
        handler = cmd_export
    elif args.command == "replay-check":
        handler = cmd_replay_check
    elif args.command == "follow":
        handler = cmd_follow
    else:
        handler = cmd_entity if args.command in ("entities", "entity") else COMMANDS[args.command]
    try:
        c = _connect(args.endpoint, args.taskhub, args.token, args.connection_string)
    except ValueError as exc:
        err.write(f"durabletask: {exc}\n")
        return EXIT_USAGE
    try:
        return handler(c, args, renderer)
    except UsageError as exc:
        err.write(f"durabletask {args.command}: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        hint = "; run the same command again to resume" if args.command == "export" else ""
        err.write(f"durabletask {args.command}: interrupted{hint}\n")
        return EXIT_INTERRUPTED
    except (DurableTaskError, LookupError, TimeoutError, ValueError, grpc.RpcError, RuntimeError, OSError) as exc:
        err.write(f"durabletask {args.command}: {_describe(exc)}\n")
        return EXIT_FAILED
    finally:
        c.close()
