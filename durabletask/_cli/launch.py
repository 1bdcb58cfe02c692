"""The console script's first step: report a broken install, run ``doctor`` on its own, then the command line.

The rest of the command line imports the SDK (``durabletask.client`` and the modules behind it). Where another
distribution has overwritten those modules, that import can fail, so ``doctor`` and the report come first and
import nothing of the SDK.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

import _dtscale_install_check as install_check
from durabletask._cli.commands.doctor import add_parser as add_doctor_parser
from durabletask._cli.commands.doctor import cmd_doctor
from durabletask._cli.options import add_global_options, command_line_parser

EXIT_BROKEN = 1


def _command(argv: list[str]) -> str | None:
    """The command named in ``argv`` (global options may come first), without knowing every command's options."""
    probe = argparse.ArgumentParser(add_help=False)
    add_global_options(probe, with_defaults=True)
    probe.add_argument("command", nargs="?")
    probe.add_argument("rest", nargs=argparse.REMAINDER)
    known, _ = probe.parse_known_args(argv)
    command: str | None = known.command
    return command


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Runs the ``durabletask`` command line; returns the process exit code.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.
        stdout: Where command output goes; ``sys.stdout`` when ``None``.
        stderr: Where diagnostics go; ``sys.stderr`` when ``None``.
    """
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = list(sys.argv[1:] if argv is None else argv)
    # Already issued at `import durabletask` when the wheel's .pth is active; this covers a start without it.
    install_check.report(stacklevel=1)
    command = _command(args)
    if command == "doctor":
        return cmd_doctor(command_line_parser(add_doctor_parser).parse_args(args), out, err)
    try:
        from durabletask._cli.main import main as run
    except Exception as error:  # whatever a foreign module raises on import; re-raised if the install is sound
        if install_check.problem() is None:
            raise
        err.write(
            f"durabletask: cannot run {command or 'the command line'}: {type(error).__name__}: {error}\n"
            "durabletask: another distribution has written into the durabletask package (see the warning above); "
            "'durabletask doctor' shows which files and how to repair them\n"
        )
        return EXIT_BROKEN
    return run(args, stdout=out, stderr=err)
