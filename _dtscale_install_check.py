"""Warns, once per process, when another distribution has written into dtscale's ``durabletask`` package.

dtscale's wheel puts this module at the top of site-packages, beside the package. ``_dtscale_install_hook``
(armed at start-up by the wheel's .pth) imports it at the first ``import durabletask`` when its listing of the
folder looks wrong; ``durabletask doctor`` and the command line use it too. It cannot live inside
``durabletask/``: Microsoft's ``durabletask`` installed over dtscale (pip lets two distributions write the same
files) replaces ``__init__``, ``client`` and ``worker`` with its own, where no code of ours runs.
"""

import os
import sys

from _dtscale_install_hook import FOREIGN_PREFIXES, METADATA_SUFFIXES
from _dtscale_install_hook import PACKAGE as PACKAGE  # the package both modules guard

DISTRIBUTION = "dtscale"
#: Where this module was installed: the site-packages folder that holds dtscale's ``durabletask`` as well.
SITE_DIR = os.path.dirname(__file__)
#: Where a package that requires Microsoft's SDK learns how to live beside dtscale.
GUIDE = "the Install section of dtscale's README"
#: dtscale's metadata folder, and those of distributions named after the package (Microsoft's and its providers').
_NAME_PREFIXES = (f"{DISTRIBUTION}-", *FOREIGN_PREFIXES)
KEEP_BESIDE = (
    f"To use a package that requires Microsoft's SDK (agent-framework-durabletask, for one) with {DISTRIBUTION}, "
    "install it with 'pip install --no-deps PACKAGE' plus its other requirements, or drop durabletask and "
    f"durabletask-azuremanaged with uv's override-dependencies; see {GUIDE}."
)


class DurableTaskInstallWarning(UserWarning):
    """Another distribution has written into dtscale's ``durabletask`` package, or removed files from it."""


def _name_and_version(entry: str) -> tuple[str, str]:
    # "durabletask_azuremanaged-1.12.0.dist-info" -> ("durabletask-azuremanaged", "1.12.0"); egg-info names may
    # carry a Python tag after the version ("durabletask-1.0.0-py3.11.egg-info").
    stem = entry.rsplit(".", 1)[0]
    name, _, rest = stem.partition("-")
    return name.lower().replace("_", "-").replace(".", "-"), rest.split("-", 1)[0]


def _writes_into_package(metadata_dir: str) -> bool:
    """Whether the distribution recorded in ``metadata_dir`` installed files under ``durabletask/``."""
    for listing, prefix in (("RECORD", PACKAGE + "/"), ("installed-files.txt", f"../{PACKAGE}/")):
        try:
            with open(os.path.join(metadata_dir, listing), encoding="utf-8") as f:
                return any(line.startswith(prefix) for line in f)
        except OSError:
            continue
    return True  # no file list to read: a distribution named after the package is taken to ship it


def scan(site_dir: str | None = None) -> tuple[str | None, list[tuple[str, str]]]:
    """dtscale's version in ``site_dir`` (None if absent) and the other distributions there that wrote files into
    ``durabletask/``, as (name, version) pairs.

    Only distributions named ``durabletask`` or ``durabletask-*`` (Microsoft's SDK and its providers) have their
    file lists read, so the common case costs one directory listing; ``durabletask doctor`` reads every RECORD.
    """
    site_dir = site_dir or SITE_DIR
    try:
        entries = os.listdir(site_dir)
    except OSError:
        return None, []
    # The names installers write are lower-case for these projects; the filter runs in C, entry by entry.
    named = sorted(e for e in entries if e.startswith(_NAME_PREFIXES) and e.endswith(METADATA_SUFFIXES))
    ours: str | None = None
    others: list[tuple[str, str]] = []
    for entry in named:
        if entry.startswith(DISTRIBUTION + "-"):
            ours = _name_and_version(entry)[1]
        elif _writes_into_package(os.path.join(site_dir, entry)):
            others.append(_name_and_version(entry))
    return ours, others


def quote(word: str) -> str:
    """``word`` as one shell word."""
    import shlex

    return shlex.quote(word)


def installer(site_dir: str, version: str | None) -> str:
    """The tool that installed dtscale in ``site_dir``, as its INSTALLER file names it ("pip" when unknown)."""
    try:
        with open(os.path.join(site_dir, f"{DISTRIBUTION}-{version}.dist-info", "INSTALLER"), encoding="utf-8") as f:
            return f.read().strip() or "pip"
    except OSError:
        return "pip"


def installer_command(python: str, tool: str, verb: str) -> str:
    """The start of an installer command for ``python``'s environment: pip's, or uv's where uv installed dtscale
    (its environments have no pip)."""
    return f"uv pip {verb} --python {quote(python)}" if tool == "uv" else f"{quote(python)} -m pip {verb}"


def repair_commands(python: str, others: list[str], version: str | None, tool: str = "pip") -> list[str]:
    """The commands that give dtscale back its files: remove ``others`` (which take shared files with them),
    then write dtscale's files again without touching its dependencies."""
    pinned = f"{DISTRIBUTION}=={version}" if version else DISTRIBUTION
    removal = installer_command(python, tool, "uninstall") + ("" if tool == "uv" else " -y")
    reinstall = installer_command(python, tool, "install")
    reinstall += f" --reinstall --no-deps {pinned}" if tool == "uv" else f" --force-reinstall --no-deps {pinned}"
    return [*([f"{removal} {' '.join(others)}"] if others else []), reinstall]


def problem(site_dir: str | None = None) -> str | None:
    """What is wrong with dtscale's ``durabletask`` package in ``site_dir`` (default: where this module is), with
    the repair, or None if nothing."""
    site_dir = site_dir or SITE_DIR
    ours, others = scan(site_dir)
    package_dir = os.path.join(site_dir, PACKAGE)
    if others:
        named = ", ".join(f"{name} {version}" for name, version in others)
        ourselves = f"{DISTRIBUTION} {ours}" if ours else DISTRIBUTION
        lead = (
            f"{package_dir} holds the files of two SDKs: {ourselves} and {named} (Microsoft's) all install the "
            f"'{PACKAGE}' package, and neither pip nor uv stops one from overwriting the other's files, so what is "
            "imported is a mix of both."
        )
    elif ours is not None and not os.path.isfile(os.path.join(package_dir, "__init__.py")):
        lead = (
            f"{DISTRIBUTION} {ours} is installed in {site_dir}, but {package_dir}/__init__.py is gone: uninstalling "
            f"a distribution that shared the folder (Microsoft's durabletask or durabletask-azuremanaged) removed "
            f"the files both had written."
        )
    else:
        return None
    commands = repair_commands(sys.executable, [name for name, _ in others], ours, installer(site_dir, ours))
    return "\n".join(
        [
            lead,
            f"To keep {DISTRIBUTION}, run:",
            *(f"    {command}" for command in commands),
            KEEP_BESIDE,
            "'durabletask doctor' lists which distribution wrote which file.",
        ]
    )


_reported = False


def report(site_dir: str | None = None, stacklevel: int = 1) -> str | None:
    """Issues a :class:`DurableTaskInstallWarning` for :func:`problem`, once per process; returns the problem."""
    global _reported
    found = problem(site_dir)
    if found is not None and not _reported:
        import warnings

        _reported = True
        warnings.warn(found, DurableTaskInstallWarning, stacklevel=stacklevel + 1)
    return found
