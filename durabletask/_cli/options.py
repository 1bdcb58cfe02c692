"""The command line's skeleton: the global options every command takes, before or after the command name."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable


def add_global_options(parser: argparse.ArgumentParser, *, with_defaults: bool) -> None:
    """The connection and output options every command takes, before or after the command name."""

    def default(value: object) -> object:
        # A command's copy must not reset what was given before the command: without a value it sets nothing.
        return value if with_defaults else argparse.SUPPRESS

    parser.add_argument(
        "--endpoint",
        default=default(os.environ.get("DURABLETASK_ENDPOINT", "localhost:8080")),
        help="host:port or URL (env DURABLETASK_ENDPOINT, default localhost:8080)",
    )
    parser.add_argument(
        "--taskhub",
        default=default(os.environ.get("DURABLETASK_TASKHUB", "default")),
        help="task hub name (env DURABLETASK_TASKHUB, default 'default')",
    )
    parser.add_argument(
        "--connection-string",
        default=default(os.environ.get("DURABLETASK_CONNECTION_STRING")),
        help="a DTS connection string 'Endpoint=...;Authentication=...;TaskHub=...' "
        "(env DURABLETASK_CONNECTION_STRING); overrides --endpoint and --taskhub",
    )
    parser.add_argument(
        "--token",
        default=default(os.environ.get("DURABLETASK_TOKEN")),
        help="bearer token sent as 'authorization' (env DURABLETASK_TOKEN)",
    )
    parser.add_argument("--json", action="store_true", default=default(False), help="machine-readable JSON output")


def command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser that ends a command line (aliases share one parser), nested actions included."""
    found: dict[int, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                nested = command_parsers(child)
                for leaf in nested or [child]:
                    found[id(leaf)] = leaf
    return list(found.values())


AddCommands = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def command_line_parser(add_commands: AddCommands) -> argparse.ArgumentParser:
    """The ``durabletask`` parser with the global options and the commands ``add_commands`` adds."""
    parser = argparse.ArgumentParser(
        prog="durabletask",
        description="Inspect and steer Durable Task orchestrations on an emulator or a Durable Task Scheduler.",
    )
    add_global_options(parser, with_defaults=True)
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    # As with az, kubectl and gh, the global options may also follow the command: 'list --json --endpoint ...'.
    for command in command_parsers(parser):
        add_global_options(command, with_defaults=False)
    return parser
