"""What the Agent Framework install test runs in: wheels of this checkout, and a fresh venv holding them with
Microsoft Agent Framework's Durable Task integration installed beside them by the documented pip path."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement

from tests.system.install.support import Wheels

ROOT = Path(__file__).resolve().parents[3]
INTEGRATION = "agent-framework-durabletask"
INTEGRATION_VERSION = "1.0.0b260922"
# Microsoft's SDK distributions, which the integration requires and our SDK replaces (same import packages).
REPLACED = frozenset({"durabletask", "durabletask-azuremanaged"})
# The integration's other requirements, listed by hand because it is installed with --no-deps
# (docs/agent-framework.md, Install).
OTHER_REQUIREMENTS = ("agent-framework-core>=1.13.0,<2", "python-dateutil>=2.8.0,<3")
PIP_TIMEOUT = 600.0


class RegistryUnreachableError(RuntimeError):
    """The package registry did not serve the integration (no network, or the release is gone)."""


@dataclass(frozen=True)
class AgentsEnv:
    """A venv with our SDK, our emulator and the integration, and the wheels it was built from."""

    python: Path
    wheels: dict[str, Path]
    integration_wheel: Path


def _pip(python: Path | str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        cwd=cwd,
    )


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def download_integration(dest: Path, index: str | None = None) -> Path:
    """The integration's wheel, fetched without its dependencies (as the documented install does).

    ``index``: ask only that index, ignoring pip's configuration, and give up at the first failure.
    """
    where = ["--isolated", "--retries", "0", "--timeout", "5", "--index-url", index] if index else []
    proc = _pip(
        sys.executable,
        "download",
        *where,
        "--no-deps",
        "--only-binary",
        ":all:",
        "-d",
        str(dest),
        f"{INTEGRATION}=={INTEGRATION_VERSION}",
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise RegistryUnreachableError(f"pip could not download {INTEGRATION}=={INTEGRATION_VERSION}: {tail}")
    found = sorted(dest.glob("agent_framework_durabletask-*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"expected one {INTEGRATION} wheel in {dest}, found {[p.name for p in found]}")
    return found[0]


def requires_dist(wheel: Path) -> list[Requirement]:
    """The Requires-Dist entries of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    return [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]


def create_agents_env(root: Path, built: Wheels) -> AgentsEnv:
    """A fresh venv installed from this checkout's wheels (``built``) by the documented pip path."""
    downloads = root / "downloads"
    downloads.mkdir()
    integration = download_integration(downloads)
    wheels = {"dtscale": built.sdk, "dtscale-emulator": built.emulator}
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    # 1. our SDK and emulator, by file so no other index's release can stand in, and the integration's other
    #    requirements; --no-compile leaves modules to compile on first import, sparing those never imported
    _check(
        _pip(python, "install", "-q", "--no-compile", *map(str, wheels.values()), *OTHER_REQUIREMENTS),
        "installing dtscale",
    )
    # 2. the integration itself, without Microsoft's SDK that it names as a requirement
    _check(_pip(python, "install", "-q", "--no-deps", str(integration)), f"installing {INTEGRATION}")
    return AgentsEnv(python=python, wheels=wheels, integration_wheel=integration)
