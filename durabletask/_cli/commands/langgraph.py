"""``durabletask langgraph dev | serve | worker``: a ``langgraph.json`` project's API served on DTS.

Everything of the server is imported only when the command runs, so the command line works (and says what
to install) without the ``langgraph`` extra.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from typing import IO

# The packages the server needs beyond the SDK: what `pip install 'dtscale[langgraph]'` brings.
REQUIRED = ("langgraph", "langgraph_sdk", "aiohttp")
DEFAULT_PORT = 2024
# A worker stopped with work in flight: the SDK's own grace; `dev` stops its emulator too, so it waits less (what
# it leaves runs again when it starts next).
WORKER_STOP_GRACE = 30.0
DEV_STOP_GRACE = 5.0
_CONNECTION = ("endpoint", "taskhub", "connection_string", "token")
#: Where the bearer token is read from when ``--auth-token`` is not given: an option is visible to every user of
#: the machine (``ps``, ``/proc/PID/cmdline``), an environment variable only to the process's owner.
AUTH_TOKEN_ENV = "DURABLETASK_LANGGRAPH_AUTH_TOKEN"


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default="langgraph.json",
        help="the project's langgraph.json, or its folder (default ./langgraph.json)",
    )


def _add_http(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="interface to serve on (default 127.0.0.1: this machine only)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port to serve on; 0 picks one (default {DEFAULT_PORT})"
    )
    p.add_argument(
        "--auth-token",
        help="require 'Authorization: Bearer <token>' (or X-Api-Key) on every request "
        f"(default: ${AUTH_TOKEN_ENV}, which other users cannot see in ps)",
    )
    p.add_argument(
        "--max-body-bytes", type=int, default=None, help="largest request body accepted (default 10 MiB); larger: 413"
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close a connection that has not sent a whole request head this long after it opened or after its "
        "last answer (default 60)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a request body may take to arrive whole (default 60); slower: 408 and the connection closes",
    )


def _add_stop_grace(p: argparse.ArgumentParser, default: float) -> None:
    p.add_argument(
        "--stop-grace",
        type=float,
        default=default,
        metavar="SECONDS",
        help=f"on SIGTERM/Ctrl-C, seconds running nodes get to finish before they are left to run again elsewhere "
        f"(default {default:g})",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("langgraph", help="serve a LangGraph project's API on DTS (needs the 'langgraph' extra)")
    actions = p.add_subparsers(dest="langgraph_command", required=True, metavar="ACTION")
    dev = actions.add_parser(
        "dev", help="everything in one process: an embedded emulator (state kept under the project), workers, the API"
    )
    _add_config(dev)
    _add_http(dev)
    dev.add_argument("--data-dir", help="the emulator's folder (default: .langgraph_dtscale/ beside langgraph.json)")
    _add_stop_grace(dev, DEV_STOP_GRACE)
    dev.add_argument(
        "--no-reload",
        action="store_true",
        help="do not start again when langgraph.json, its .env or the project's imported code changes",
    )
    serve = actions.add_parser("serve", help="the HTTP API only, stateless, against --endpoint or --connection-string")
    _add_config(serve)
    _add_http(serve)
    worker = actions.add_parser("worker", help="workers only: every graph of langgraph.json, against the task hub")
    _add_config(worker)
    _add_stop_grace(worker, WORKER_STOP_GRACE)


def missing_packages() -> list[str]:
    """The packages of the ``langgraph`` extra that are not installed."""
    return [name for name in REQUIRED if not _installed(name)]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken package
        return False


def _explicit_connection(args: argparse.Namespace) -> str | None:
    """The connection option given to ``dev`` (which runs its own emulator), if any."""
    defaults = {
        "endpoint": os.environ.get("DURABLETASK_ENDPOINT", "localhost:8080"),
        "taskhub": os.environ.get("DURABLETASK_TASKHUB", "default"),
        "connection_string": os.environ.get("DURABLETASK_CONNECTION_STRING"),
        "token": os.environ.get("DURABLETASK_TOKEN"),
    }
    for name in _CONNECTION:
        if getattr(args, name, None) != defaults[name]:
            return "--" + name.replace("_", "-")
    return None


def _token_from_environment(args: argparse.Namespace) -> None:
    """``--auth-token`` from ``AUTH_TOKEN_ENV`` when the option is absent (for the commands that serve HTTP)."""
    if not hasattr(args, "auth_token") or args.auth_token is not None:
        return
    token = os.environ.get(AUTH_TOKEN_ENV)
    if token is not None:
        args.auth_token = token
        args.auth_token_from_env = True


def _check(args: argparse.Namespace) -> str | None:
    """A usage problem of the arguments, said for the user, or ``None``."""
    action = args.langgraph_command
    if action == "dev" and (given := _explicit_connection(args)) is not None:
        return f"{given} does not apply to dev, which runs its own emulator; use 'serve' and 'worker' for a task hub"
    auth = getattr(args, "auth_token", None)
    if auth is not None and (not auth.strip() or auth != auth.strip()):
        given = AUTH_TOKEN_ENV if getattr(args, "auth_token_from_env", False) else "--auth-token"
        return f"{given} must be a non-empty token without surrounding spaces"
    port = getattr(args, "port", 0)
    if not 0 <= port <= 65535:
        return f"--port must be between 0 and 65535, got {port}"
    grace = getattr(args, "stop_grace", 0.0)
    if not 0 <= grace <= 3600:
        return f"--stop-grace must be between 0 and 3600 seconds, got {grace:g}"
    limit = getattr(args, "max_body_bytes", None)
    if limit is not None and limit < 1024:
        return f"--max-body-bytes must be at least 1024, got {limit}"
    for flag in ("idle_timeout", "body_timeout"):
        seconds = getattr(args, flag, None)
        if seconds is not None and not 0 < seconds <= 86400:
            return f"--{flag.replace('_', '-')} must be more than 0 and at most 86400 seconds, got {seconds:g}"
    return None


def cmd_langgraph(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Run ``durabletask langgraph <action>``; returns the exit code."""
    name = f"durabletask langgraph {args.langgraph_command}"
    missing = missing_packages()
    if missing:
        err.write(
            f"{name}: needs the 'langgraph' extra (missing: {', '.join(missing)}); "
            "install it with: pip install 'dtscale[langgraph]'\n"
        )
        return 1
    _token_from_environment(args)
    problem = _check(args)
    if problem is not None:
        err.write(f"{name}: {problem}\n")
        return 2
    from durabletask.extensions.langgraph._server import launch_cli

    try:
        return launch_cli.run(args, out)
    except KeyboardInterrupt:
        return 0
    except (launch_cli.LaunchError, OSError) as error:
        err.write(f"{name}: {error}\n")
        return 1
