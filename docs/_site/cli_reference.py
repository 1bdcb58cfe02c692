"""Markdown for a command's reference, read from the argparse parser the command itself runs."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator

# Each documented program and the function that builds the parser its console script uses.
PARSERS: dict[str, str] = {
    "durabletask": "durabletask._cli.parser:build_parser",
    "durabletask-emulator": "dtscale_emulator.__main__:build_parser",
}


def _builder(prog: str) -> Callable[[], argparse.ArgumentParser]:
    module, _, name = PARSERS[prog].partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    yield path, parser, ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue  # an alias of a command already listed
                seen.add(id(sub))
                for sub_path, sub_parser, _ in _commands(sub, f"{path} {name}"):
                    yield sub_path, sub_parser, helps.get(name, "") if sub_parser is sub else ""


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option_row(action: argparse.Action) -> str | None:
    if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
        return None
    names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
    if action.option_strings and action.nargs != 0:
        names += f" `{action.metavar or action.dest.upper()}`"
    default = action.default
    shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
    choices = f" (one of {', '.join(f'`{c}`' for c in action.choices)})" if action.choices else ""
    required = "yes" if action.required or not action.option_strings else ""
    help_text = (action.help or "") % {"default": default, "prog": ""} if action.help else ""
    return f"| {names} | {required} | {shown} | {_escape(help_text)}{choices} |"


def render(prog: str) -> str:
    """The reference of ``prog``: usage, description and a table of arguments for it and each subcommand."""
    parser = _builder(prog)()
    parser.prog = prog
    out: list[str] = []
    for path, command, summary in _commands(parser, prog):
        level = "##" if path == prog else "###"
        out += [f"{level} `{path}`", ""]
        if summary or command.description:
            out += [_escape(command.description or summary), ""]
        out += ["```text", command.format_usage().strip(), "```", ""]
        rows = [row for row in map(_option_row, command._actions) if row]
        if rows:
            out += ["| argument | required | default | what it does |", "| --- | --- | --- | --- |", *rows, ""]
        if command.epilog:
            out += [_escape(command.epilog), ""]
    return "\n".join(out)
