"""``durabletask doctor``: reports whether this environment's ``durabletask`` package is dtscale's, whole.

It needs no endpoint and imports nothing of ``durabletask`` beyond the command line's install_state and the
standalone ``_grpc_polling`` (when it is there), so it runs even where another distribution has overwritten the
package's other modules. It also tells what ``durabletask.grpc_options.enable_thread_polling()`` would do here.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import IO, Any

import _dtscale_install_check as install_check
from durabletask._cli.install_state import DistributionFiles, InstallState, inspect

EXIT_CONSISTENT, EXIT_INCONSISTENT = 0, 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser(
        "doctor",
        help="check which installed distribution wrote which file of the durabletask package (no endpoint needed)",
        description="Reads the installed distributions' RECORD files: which one owns which file of the durabletask "
        "package, files claimed by more than one, files that differ from their RECORD entry, and whether "
        "dtscale-emulator is installed and importable. Exits 0 when consistent, 1 when not, with the repair.",
    )


def _shown(state: InstallState, path: Path) -> str:
    for folder in state.imported_from:
        if folder in path.parents:
            return str(path.relative_to(folder.parent))
    return str(path)


def _distribution(dist: DistributionFiles, state: InstallState) -> dict[str, Any]:
    return {
        "name": dist.name,
        "version": dist.version,
        "location": str(dist.location),
        "editable": dist.editable,
        "required_by": dist.required_by,
        "files": [{"path": f.shown, "state": f.state, "shared": f.path in state.shared} for f in dist.files],
    }


def grpc_polling() -> dict[str, Any]:
    """What enable_thread_polling() would do in a program of this environment, found without importing grpc."""
    try:
        from durabletask import _grpc_polling as polling
    except ImportError as error:  # the module was overwritten or removed by another distribution
        return {"state": None, "grpcio": None, "verified_series": [], "environment": None, "note": str(error)}
    outcome = polling.in_a_new_program()
    notes: dict[polling.ThreadPolling, str] = {
        polling.ThreadPolling.APPLIED: "a call would turn it on: this grpcio is a version it was verified on",
        polling.ThreadPolling.CHOSEN_BY_ENVIRONMENT: "a call would change nothing: GRPC_EXPERIMENTS is set here",
        polling.ThreadPolling.UNVERIFIED_GRPC: "a call would change nothing: this grpcio was not verified with it",
        polling.ThreadPolling.NO_GRPC: "a call would change nothing: grpc is not installed",
    }
    return {
        "state": outcome.name,
        "grpcio": polling.installed_grpcio(),
        "verified_series": [f"{series}x" for series in polling.VERIFIED_SERIES],
        "environment": os.environ.get(polling.VARIABLE),
        "note": notes[outcome],
    }


def _polling_line(found: dict[str, Any]) -> str:
    grpcio = f"grpcio {found['grpcio']}" if found["grpcio"] else "grpcio unknown"
    verified = ", ".join(found["verified_series"]) or "none"
    environment = "" if found["environment"] is None else f"; GRPC_EXPERIMENTS={found['environment']!r}"
    return (
        "gRPC client thread polling: opt-in (durabletask.grpc_options.enable_thread_polling(), before grpc's first"
        f" import); {found['note']} ({grpcio}, verified on {verified}{environment})"
    )


def as_json(state: InstallState) -> dict[str, Any]:
    """The report as JSON-ready data; every list in full."""
    emulator = state.emulator
    return {
        "consistent": state.consistent,
        "python": state.python,
        "imported_from": [str(p) for p in state.imported_from],
        "sdk": None if state.sdk is None else _distribution(state.sdk, state),
        "others": [_distribution(d, state) for d in state.others],
        "shared": [
            {"path": _shown(state, p), "claimed_by": names, "content_of": state.content_of[p]}
            for p, names in sorted(state.shared.items())
        ],
        "differing": [
            {"path": f.shown, "distribution": d.name, "state": f.state}
            for d in ([state.sdk] if state.sdk else []) + state.others
            for f in d.files
            if f.state != "ok"
        ],
        "unclaimed": [_shown(state, p) for p in state.unclaimed],
        "emulator": {
            "required": emulator.required,
            "installed": emulator.installed,
            "importable": emulator.importable,
            "error": emulator.error,
        },
        "grpc_client_polling": grpc_polling(),
        "problems": state.problems,
        "repair": state.repair,
    }


def _owners_lines(state: InstallState) -> list[str]:
    lines = []
    for dist in [state.sdk, *state.others]:
        if dist is None:
            continue
        shared = sum(f.path in state.shared for f in dist.files)
        where = "editable install: the checkout's files" if dist.editable else f"{len(dist.files)} files"
        extra = f", {shared} also claimed by another distribution" if shared else ""
        needed = f"; required by {', '.join(dist.required_by)}" if dist.required_by and dist is not state.sdk else ""
        lines.append(f"  {dist.label:<34} {where}{extra}{needed}")
    return lines


def _file_lines(state: InstallState) -> list[str]:
    lines = []
    if state.shared:
        lines += ["", f"Files claimed by more than one distribution ({len(state.shared)}), and whose bytes are there:"]
        for path, names in sorted(state.shared.items()):
            lines.append(f"  {_shown(state, path):<60} {', '.join(names)}: {state.content_of[path] or 'neither'}'s")
    changed = [
        (d.name, f)
        for d in [state.sdk, *state.others]
        if d is not None
        for f in d.files
        if f.state != "ok" and f.path not in state.shared
    ]
    if changed:
        lines += ["", f"Files that differ from their RECORD entry or are missing ({len(changed)}):"]
        lines += [f"  {f.shown:<60} {name}: {f.state}" for name, f in changed]
    if state.unclaimed:
        lines += ["", f"Files no installed distribution claims ({len(state.unclaimed)}):"]
        lines += [f"  {_shown(state, p)}" for p in state.unclaimed]
    return lines


def render(state: InstallState) -> str:
    """The report for a person: owners, the files in question, the emulator, the verdict and the repair."""
    emulator = state.emulator
    imported = ", ".join(map(str, state.imported_from)) or "not importable"
    lines = [f"Python: {state.python}", f"{install_check.PACKAGE} is imported from: {imported}", ""]
    lines += ["Distributions with files in the durabletask package:", *(_owners_lines(state) or ["  none"])]
    lines += _file_lines(state)
    installed = emulator.installed or "not installed"
    importable = "importable" if emulator.importable else f"not importable ({emulator.error})"
    required = f", {install_check.DISTRIBUTION} requires {emulator.required}" if emulator.required else ""
    lines += ["", f"dtscale-emulator: {installed}{required}; {importable}", _polling_line(grpc_polling()), ""]
    if state.consistent:
        lines.append("Verdict: consistent: no other distribution has written into the durabletask package.")
    else:
        lines.append("Verdict: inconsistent:")
        lines += [f"  - {problem}" for problem in state.problems]
        lines += ["", "Repair:", *(f"  {command}" for command in state.repair)]
        if state.others:
            lines += ["", install_check.KEEP_BESIDE]
    return "\n".join(lines) + "\n"


def cmd_doctor(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    state = inspect()
    out.write(json.dumps(as_json(state), indent=2) + "\n" if args.json else render(state))
    return EXIT_CONSISTENT if state.consistent else EXIT_INCONSISTENT
