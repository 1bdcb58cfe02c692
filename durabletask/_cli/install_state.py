"""What ``durabletask doctor`` reads: which installed distribution wrote which file of the ``durabletask`` package.

Only the standard library and ``_dtscale_install_check`` are imported, never another module of ``durabletask``:
the command must run where another distribution has replaced this package's modules with its own.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.machinery
import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import _dtscale_install_check as install_check

EMULATOR = "dtscale-emulator"
EMULATOR_PACKAGE = "dtscale_emulator"
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)(;.*)?$")


def normalize(name: str) -> str:
    """A distribution name in its PEP 503 form, as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class RecordedFile:
    """One file of the package as a distribution's RECORD lists it, and how the disk compares."""

    path: Path  # absolute
    shown: str  # as RECORD writes it, e.g. durabletask/client.py
    state: str  # "ok", "differs" or "missing"


@dataclass
class DistributionFiles:
    """An installed distribution that wrote files into the ``durabletask`` package."""

    name: str
    version: str
    location: Path
    editable: bool = False
    installer: str = "pip"  # as its INSTALLER file says
    required_by: list[str] = field(default_factory=list)
    files: list[RecordedFile] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class EmulatorState:
    required: str | None  # dtscale's requirement on it, e.g. "==0.1.0"
    installed: str | None
    importable: bool
    error: str | None


@dataclass
class InstallState:
    """The findings of one inspection, the problems they amount to, and the commands that repair them."""

    python: str
    imported_from: list[Path]
    sdk: DistributionFiles | None
    others: list[DistributionFiles]
    shared: dict[Path, list[str]]  # a file claimed by several distributions -> their names
    content_of: dict[Path, str | None]  # for each shared file: the distribution whose bytes are on disk
    unclaimed: list[Path]
    emulator: EmulatorState
    problems: list[str] = field(default_factory=list)
    repair: list[str] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.problems


def _digest(path: Path, mode: str) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return base64.urlsafe_b64encode(hashlib.new(mode, data).digest()).rstrip(b"=").decode("ascii")


def _recorded(dist: metadata.Distribution) -> list[RecordedFile]:
    found = []
    for entry in dist.files or ():
        # Entries without a hash are the RECORD itself and bytecode compiled at install: nothing to compare.
        if entry.parts[:1] != (install_check.PACKAGE,) or entry.hash is None:
            continue
        path = Path(str(dist.locate_file(entry))).resolve()
        digest = _digest(path, entry.hash.mode)
        state = "missing" if digest is None else ("ok" if digest == entry.hash.value else "differs")
        found.append(RecordedFile(path, str(entry), state))
    return found


def _is_editable(dist: metadata.Distribution) -> bool:
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return False
    return bool(info.get("dir_info", {}).get("editable"))


def _requirement(text: str) -> tuple[str, str] | None:
    """(normalized name, version specifier) of a requirement that applies without extras, else None."""
    match = _REQUIREMENT_NAME.match(text)
    if match is None or (match.group(3) and "extra" in match.group(3)):
        return None
    return normalize(match.group(1)), match.group(2).strip()


def _unique(dists: Iterable[metadata.Distribution]) -> list[metadata.Distribution]:
    # One environment can list a distribution twice (two sys.path entries for one folder): the first one counts.
    seen: set[tuple[str, str]] = set()
    found = []
    for dist in dists:
        key = (normalize(dist.metadata["Name"] or ""), str(Path(str(dist.locate_file(""))).resolve()))
        if key not in seen:
            seen.add(key)
            found.append(dist)
    return found


def _package_distributions(dists: list[metadata.Distribution]) -> list[DistributionFiles]:
    """The distributions with files in ``durabletask/``, and dtscale's always, with what requires each."""
    required_by: dict[str, list[str]] = {}
    for dist in dists:
        for text in dist.requires or ():
            parsed = _requirement(text)
            if parsed is not None:
                required_by.setdefault(parsed[0], []).append(f"{normalize(dist.metadata['Name'])} {dist.version}")
    found = []
    for dist in dists:
        name = normalize(dist.metadata["Name"] or "")
        files = _recorded(dist)
        if files or name == install_check.DISTRIBUTION:
            location = Path(str(dist.locate_file(""))).resolve()
            tool = (dist.read_text("INSTALLER") or "").strip() or "pip"
            found.append(
                DistributionFiles(
                    name, dist.version, location, _is_editable(dist), tool, sorted(required_by.get(name, [])), files
                )
            )
    return found


def _imported_from(search_path: list[str] | None) -> list[Path]:
    """The folders of the ``durabletask`` package that Python imports (from ``search_path`` instead if given)."""
    module = sys.modules.get(install_check.PACKAGE)
    if search_path is None and module is not None and getattr(module, "__path__", None) is not None:
        return [Path(p).resolve() for p in module.__path__]
    if search_path is None:
        spec = importlib.util.find_spec(install_check.PACKAGE)
    else:
        spec = importlib.machinery.PathFinder.find_spec(install_check.PACKAGE, search_path)
    locations = spec.submodule_search_locations if spec is not None else None
    return [Path(p).resolve() for p in locations or ()]


def _emulator(sdk: metadata.Distribution | None) -> EmulatorState:
    required = None
    for text in (sdk.requires or ()) if sdk is not None else ():
        parsed = _requirement(text)
        if parsed is not None and parsed[0] == EMULATOR:
            required = parsed[1]
    try:
        installed: str | None = metadata.version(EMULATOR)
    except metadata.PackageNotFoundError:
        installed = None
    try:
        importlib.import_module(EMULATOR_PACKAGE)
    except Exception as error:  # any failure to import is the finding, whatever its kind
        return EmulatorState(required, installed, False, f"{type(error).__name__}: {error}")
    return EmulatorState(required, installed, True, None)


def _unclaimed(imported: list[Path], claimed: set[Path]) -> list[Path]:
    """Files in an installed package folder that no RECORD lists (bytecode caches aside)."""
    found: list[Path] = []
    for folder in imported:
        if not any(folder in path.parents for path in claimed):
            continue  # a checkout (editable install): its files are nobody's RECORD's
        for root, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            found.extend(p for p in (Path(root, n).resolve() for n in names) if p not in claimed)
    return sorted(found)


def inspect(search_path: list[str] | None = None) -> InstallState:
    """Reads the installed distributions' RECORD files and the disk, on ``sys.path`` or ``search_path``; changes
    nothing."""
    dists = _unique(metadata.distributions() if search_path is None else metadata.distributions(path=search_path))
    package_dists = _package_distributions(dists)
    sdk = next((d for d in package_dists if d.name == install_check.DISTRIBUTION), None)
    others = [d for d in package_dists if d is not sdk]
    owners: dict[Path, list[str]] = {}
    for dist in package_dists:
        for recorded in dist.files:
            owners.setdefault(recorded.path, []).append(dist.name)
    shared = {path: sorted(names) for path, names in owners.items() if len(names) > 1}
    content_of = {
        path: next((d.name for d in package_dists for f in d.files if f.path == path and f.state == "ok"), None)
        for path in shared
    }
    sdk_meta = next((d for d in dists if normalize(d.metadata["Name"] or "") == install_check.DISTRIBUTION), None)
    imported = _imported_from(search_path)
    state = InstallState(
        python=sys.executable,
        imported_from=imported,
        sdk=sdk,
        others=others,
        shared=shared,
        content_of=content_of,
        unclaimed=_unclaimed(imported, set(owners)),
        emulator=_emulator(sdk_meta),
    )
    judge(state)
    return state


def _emulator_problems(state: InstallState) -> tuple[list[str], list[str]]:
    tool = state.sdk.installer if state.sdk is not None else "pip"
    emulator, install = state.emulator, install_check.installer_command(state.python, tool, "install")
    wanted = f"{EMULATOR}{emulator.required or ''}"
    needs = f" ({install_check.DISTRIBUTION} requires {wanted})"
    if emulator.installed is None:
        return [f"{EMULATOR} is not installed{needs}"], [f"{install} {install_check.quote(wanted)}"]
    problems = []
    pinned = emulator.required.startswith("==") if emulator.required else False
    if pinned and emulator.required is not None and emulator.installed != emulator.required[2:]:
        problems.append(f"{EMULATOR} {emulator.installed} is installed{needs}")
    if not emulator.importable:
        problems.append(f"{EMULATOR_PACKAGE} cannot be imported: {emulator.error}")
    again = "--reinstall" if tool == "uv" else "--force-reinstall"
    return problems, ([f"{install} {again} {install_check.quote(wanted)}"] if problems else [])


def _package_problems(state: InstallState, sdk: DistributionFiles) -> list[str]:
    problems = []
    if state.others:
        named = ", ".join(d.label for d in state.others)
        problems.append(
            f"{named} also installed files into the {install_check.PACKAGE} package: {len(state.shared)} files are "
            f"claimed by {sdk.name} and by another distribution, and the disk holds only one of each"
        )
    expected = sdk.location / install_check.PACKAGE
    if not sdk.editable and expected not in state.imported_from:
        found = ", ".join(map(str, state.imported_from)) or "nowhere"
        problems.append(f"Python imports {install_check.PACKAGE} from {found}, not from {sdk.name}'s {expected}")
    changed = [f for f in sdk.files if f.state == "differs" and f.path not in state.shared]
    missing = [f for f in sdk.files if f.state == "missing"]
    if changed:
        problems.append(f"{len(changed)} of {sdk.name}'s files differ from its RECORD")
    if missing:
        problems.append(f"{len(missing)} of {sdk.name}'s files are missing")
    return problems


def judge(state: InstallState) -> None:
    """Fills in ``state.problems`` and ``state.repair`` from its findings."""
    sdk = state.sdk
    if sdk is None:
        state.problems.append(f"{install_check.DISTRIBUTION} is not installed for {state.python}")
        install = install_check.installer_command(state.python, "pip", "install")
        state.repair.append(f"{install} {install_check.DISTRIBUTION}")
    else:
        package = _package_problems(state, sdk)
        state.problems.extend(package)
        if package:
            state.repair.extend(
                install_check.repair_commands(state.python, [d.name for d in state.others], sdk.version, sdk.installer)
            )
    if state.unclaimed:
        state.problems.append(
            f"{len(state.unclaimed)} files in the {install_check.PACKAGE} package belong to no installed distribution"
        )
    problems, repair = _emulator_problems(state)
    state.problems.extend(problems)
    state.repair.extend(repair)
