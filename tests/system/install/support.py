"""Shared helpers of the install tests: this checkout's two wheels, fresh virtual environments, PyPI's reach.

Each test installs from wheels into a venv of its own, next to what users really install, never the editable
dev install. The wheels are built once per session from a copy of the checkout (so the build leaves nothing in
the work tree); pip's cache is kept, so later sessions download little. Needing PyPI, these tests fail in CI
when it cannot be reached and skip elsewhere, saying why.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import venv
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from tests.conftest import running_in_ci

ROOT = Path(__file__).resolve().parents[3]
#: What dtscale's wheel puts into site-packages to arm the install check at start-up (setup.py writes it).
PTH = "dtscale-install-check.pth"
PTH_LINE = "import _dtscale_install_hook; _dtscale_install_hook.install()\n"
PIP_TIMEOUT = 900.0  # one install step on a loaded machine with a cold cache
#: What a copy of the checkout leaves out: version control, environments, caches and earlier build output.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".peer-venv", "__pycache__", "*.pyc", "build", "dist", "*.egg-info", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".hypothesis", ".cache", "node_modules", "*.db", "*.db-wal", "*.db-shm",
)
#: Variables of the test process that would make a child interpreter see something other than its venv.
_FOREIGN_ENV = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "__PYVENV_LAUNCHER__")


@dataclass(frozen=True)
class Wheels:
    """The two distributions built from this checkout."""

    sdk: Path  # dtscale
    emulator: Path  # dtscale-emulator

    @property
    def folder(self) -> Path:
        return self.sdk.parent


def needs_pypi(reason: str) -> None:
    """Fails in CI, skips elsewhere: a test that needs PyPI cannot run here."""
    message = f"PyPI is needed and cannot be reached: {reason}"
    if running_in_ci():
        pytest.fail(message + " (CI must reach the package registries)")
    print(message, file=sys.stderr)
    pytest.skip(message)


def _run(
    args: Sequence[str | Path], *, timeout: float = PIP_TIMEOUT, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="session")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Checks once per session that pip reaches PyPI (bypassing pip's cache, so the answer is the network's)."""
    dest = tmp_path_factory.mktemp("pypi-probe")
    probe = _run(
        [sys.executable, "-m", "pip", "download", "--no-cache-dir", "--no-deps", "--disable-pip-version-check",
         "--timeout", "30", "--retries", "1", "-d", dest, "durabletask==1.12.0"],
        timeout=180,
    )
    if probe.returncode != 0:
        needs_pypi(probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"pip exited {probe.returncode}")


def build_wheels(dest: Path) -> Wheels:
    """Builds dtscale's and dtscale-emulator's wheels (``pip wheel --no-deps``) from a copy of the checkout."""
    with tempfile.TemporaryDirectory(prefix="dtscale-src-") as scratch:
        source = Path(scratch, "src")
        shutil.copytree(ROOT, source, ignore=_NOT_SOURCES)
        built = _run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", dest,
             source, source / "emulator"]
        )
    assert built.returncode == 0, built.stdout + built.stderr
    sdk, emulator = sorted(dest.glob("dtscale-*.whl")), sorted(dest.glob("dtscale_emulator-*.whl"))
    assert len(sdk) == 1 and len(emulator) == 1, sorted(p.name for p in dest.iterdir())
    return Wheels(sdk[0], emulator[0])


@pytest.fixture(scope="session")
def wheels(pypi: None, tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    """The two wheels of this checkout, built once per session (the build fetches setuptools from PyPI)."""
    return build_wheels(tmp_path_factory.mktemp("wheels"))


Preparation = Callable[[Wheels, Path], Any]
"""Builds what a module's tests use (venvs, installs) from the wheels, in a fresh folder of its own."""
_PREPARATIONS: dict[str, Preparation] = {}
#: How many preparations run at once: pip is mostly waiting on the registry and the disk.
PREPARING_AT_ONCE = 2


def prepared_early(prepare: Preparation) -> Preparation:
    """Lets ``prepare`` start as soon as the wheels are built, beside the other modules' preparations and the tests
    that run meanwhile, rather than when its fixture is first needed. It still builds everything of its own."""
    _PREPARATIONS[_key(prepare)] = prepare
    return prepare


def _key(prepare: Preparation) -> str:
    return f"{prepare.__module__}.{prepare.__qualname__}"


class Preparations:
    """The session's early preparations, running in background threads; :meth:`result` waits for one."""

    def __init__(self, wheels: Wheels, folders: pytest.TempPathFactory, prepares: Iterable[Preparation]) -> None:
        self._wheels, self._folders = wheels, folders
        self._pool = ThreadPoolExecutor(PREPARING_AT_ONCE, thread_name_prefix="install-preparation")
        self._futures: dict[str, Future[Any]] = {_key(p): self._pool.submit(self._run, p) for p in prepares}

    def _run(self, prepare: Preparation) -> Any:
        return prepare(self._wheels, self._folders.mktemp(prepare.__name__.strip("_")))

    def result(self, prepare: Preparation) -> Any:
        """What ``prepare`` built (it raises here what it raised there: a failure, or a skip)."""
        future = self._futures.get(_key(prepare))
        return future.result() if future is not None else self._run(prepare)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def preparations(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Preparations]:
    """The early preparations of the modules this session runs tests of, started together."""
    modules = {item.module.__name__ for item in request.session.items if isinstance(item, pytest.Function)}
    chosen = [p for p in _PREPARATIONS.values() if p.__module__ in modules]
    found = Preparations(wheels, tmp_path_factory, chosen)
    try:
        yield found
    finally:
        found.close()


class Venv:
    """A virtual environment made by :func:`make_venv`, and ways to run its interpreter, pip and scripts."""

    def __init__(self, path: Path, find_links: Sequence[Path] = ()) -> None:
        self.path = path
        self.bin = path / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / "python"
        self.find_links = list(find_links)
        # Scripts run from here, so the checkout (the tests' working directory) is never on their sys.path.
        self.cwd = path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of an activated venv, with pip also looking in this session's wheel folders."""
        env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        env["VIRTUAL_ENV"] = str(self.path)
        links = [env.get("PIP_FIND_LINKS", ""), *map(str, self.find_links)]
        env["PIP_FIND_LINKS"] = " ".join(link for link in links if link)
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        env.update(extra)
        return env

    def run(self, *args: str | Path, timeout: float = 120.0, **env: str) -> subprocess.CompletedProcess[str]:
        """Runs a command of this venv (a name in its bin folder, else as given), in its folder and environment."""
        program = self.bin / str(args[0])
        command = [program if program.exists() else args[0], *args[1:]]
        return _run(command, timeout=timeout, cwd=self.cwd, env=self.env(**env))

    def python_code(self, code: str, timeout: float = 120.0, **env: str) -> subprocess.CompletedProcess[str]:
        return self.run("python", "-c", code, timeout=timeout, **env)

    def pip(self, *args: str | Path, timeout: float = PIP_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """``python -m pip ARGS`` in this venv; fails the test with pip's output when pip fails."""
        done = self.run("python", "-m", "pip", *args, timeout=timeout)
        assert done.returncode == 0, f"pip {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def install(self, *requirements: str | Path) -> None:
        self.pip("install", "-q", *requirements)

    @property
    def site_packages(self) -> Path:
        done = self.python_code("import sysconfig; print(sysconfig.get_paths()['purelib'])")
        assert done.returncode == 0, done.stderr
        return Path(done.stdout.strip())


def make_venv(path: Path, requirements: Sequence[str | Path] = (), wheels: Wheels | None = None) -> Venv:
    """A fresh venv at ``path`` (with pip) holding ``requirements``; pip also finds ``wheels`` by name."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    made = Venv(path, [wheels.folder] if wheels is not None else [])
    if requirements:
        made.install(*requirements)
    return made


class Process:
    """A long-running command of a venv (e.g. ``durabletask-emulator``), its output lines collected; a context
    manager that stops it on exit."""

    def __init__(self, env: Venv, *args: str) -> None:
        program = env.bin / args[0]
        self.proc = subprocess.Popen(
            [str(program if program.exists() else args[0]), *args[1:]], cwd=env.cwd, env=env.env(), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        self.lines: list[str] = []
        self._closed = False  # the output ended: the process exited or is exiting
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_for_line(self, prefix: str, timeout: float = 60.0) -> str:
        """The first output line starting with ``prefix``; fails if the process ends or ``timeout`` passes first."""

        def match() -> str | None:
            return next((line for line in self.lines if line.startswith(prefix)), None)

        with self._changed:
            self._changed.wait_for(lambda: match() is not None or self._closed, timeout)
            found = match()
        assert found is not None, f"no line {prefix!r} from {self.proc.args}:\n" + "\n".join(self.lines)
        return found

    def __enter__(self) -> Process:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def emulator_address(process: Process) -> str:
    """The host:port that a ``durabletask-emulator`` process prints once it serves."""
    return process.wait_for_line("Durable Task emulator listening on ").rsplit(" ", 1)[1]


def record_hash(path: Path) -> str:
    """A file's SHA-256 as a RECORD writes it (``sha256=`` left off)."""
    return base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()


def recorded_hashes(site_packages: Path, metadata_dir: str) -> dict[str, str]:
    """The RECORD of the distribution whose metadata folder is ``metadata_dir``: path -> hash ('' if none)."""
    lines = (site_packages / metadata_dir / "RECORD").read_text().splitlines()
    return {path: digest.removeprefix("sha256=") for path, digest, _ in (line.split(",") for line in lines if line)}


def distribution_files(site_packages: Path, names: Iterable[str]) -> dict[str, str]:
    """Every file that the distributions with the metadata folders ``names`` list in their RECORD, and every
    file under the top-level folders they write into, with its SHA-256: a snapshot to compare byte for byte
    before and after another install."""
    found: dict[str, str] = {}
    for name in names:
        recorded = list(recorded_hashes(site_packages, name))
        tops = {Path(entry).parts[0] for entry in recorded if not entry.startswith("..")}
        files = {(site_packages / entry).resolve() for entry in recorded}
        for top in (site_packages / top for top in tops):
            files |= {p.resolve() for p in top.rglob("*")} if top.is_dir() else set()
        found.update({os.path.relpath(p, site_packages.resolve()): record_hash(p) for p in files if p.is_file()})
    return found
