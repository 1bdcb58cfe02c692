#!/usr/bin/env python3
"""One entry point for the Quick start: creates .venv when missing, then runs the demo or the tests.

Usage:
    python3 dev.py demo            # the demo on the embedded emulator
    python3 dev.py test [ARGS...]  # every test (extra ARGS go to pytest)
    python3 dev.py bench           # the benchmarks in bench/
    python3 dev.py docs [--serve]  # build the documentation site into site/ (strictly), or serve it while editing
    python3 dev.py run CMD...      # any command inside the project's environment

Against another DTS endpoint (the public emulator container, managed DTS, or a separate emulator of ours):
    python3 dev.py test --backend http://localhost:8080 [--taskhub default] [--taskhub-mode auto|fresh|exclusive|shared]
    python3 dev.py test --connection-string "Endpoint=https://...;Authentication=DefaultAzure;TaskHub=..."
    python3 dev.py bench --backend URL [--taskhub NAME]
The same through DTS_TEST_BACKEND, DTS_TEST_TASKHUB, DTS_TEST_CONNECTION_STRING, DTS_TEST_TASKHUB_MODE (and
DTS_TEST_TOKEN for an emulator started with --auth-token; GRPC_DEFAULT_SSL_ROOTS_FILE_PATH trusts a private CA).
Without test paths, such a run takes the suites that can use an external backend: e2e, interop, samples, recovery.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".installed"
# Microsoft's official SDK, used only as a test peer from its own interpreter, never imported by the product.
PEER_VENV = ROOT / ".peer-venv"
PROJECTS = (ROOT / "emulator" / "pyproject.toml", ROOT / "pyproject.toml")
PEER_PY = PEER_VENV / ("Scripts" if os.name == "nt" else "bin") / "python"
PEER_PACKAGES = (
    "durabletask[azure-blob-payloads,history-export-azure]==1.12.0",
    "durabletask-azuremanaged==1.12.0",
    "opentelemetry-api",
    "opentelemetry-sdk",
)
# The suites whose scenarios run against an external endpoint (tests/support/external/plugin.py skips the rest there).
EXTERNAL_SUITES = ("tests/e2e", "tests/interop", "tests/system/samples", "tests/system/recovery")
EXTERNAL_OPTIONS = ("--backend", "--endpoint", "--connection-string")
EXTERNAL_ENV = ("DTS_TEST_BACKEND", "DTS_TEST_CONNECTION_STRING")


def _requirements_digest() -> str:
    # Both distributions' metadata: the SDK's (this folder) and the emulator's (emulator/).
    return hashlib.sha256(b"".join(p.read_bytes() for p in PROJECTS)).hexdigest()


def ensure_venv() -> None:
    """Create the virtual environment and install the project with its dev extras when needed."""
    if not PY.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = _requirements_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    print("installing the project and its development dependencies", flush=True)
    pip = [str(PY), "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    # One resolution for both, so the SDK's dependency on dtscale-emulator is met by this checkout's copy.
    subprocess.run([*pip, "-e", f"{ROOT / 'emulator'}[dashboard,otlp]", "-e", f"{ROOT}[dev]"], check=True, cwd=ROOT)
    STAMP.write_text(digest)


def ensure_peer_venv() -> None:
    """Create the isolated venv holding the official SDK for interop tests and benchmarks."""
    stamp = PEER_VENV / ".installed"
    wanted = " ".join(PEER_PACKAGES)
    if stamp.exists() and stamp.read_text() == wanted:
        return
    if PEER_VENV.is_symlink():
        # Clearing would empty the environment the link points at, which other checkouts may be using.
        sys.exit(f"{PEER_VENV} is a link to an environment with other packages than {wanted}; "
                 "remove the link and run again to create an environment of this checkout's own")
    print(f"creating the interop peer environment in {PEER_VENV}", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(PEER_VENV)
    pip = [str(PEER_PY), "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    subprocess.run([*pip, *PEER_PACKAGES], check=True, cwd=ROOT)
    stamp.write_text(wanted)


def pytest_args(args: list[str], env: dict[str, str]) -> list[str]:
    """``args`` for pytest; an external-backend run without test paths gets the suites that can use one."""
    external = any(a.split("=", 1)[0] in EXTERNAL_OPTIONS for a in args) or any(env.get(v) for v in EXTERNAL_ENV)
    has_paths = any((ROOT / a.split("::", 1)[0]).exists() for a in args if not a.startswith("-"))
    return [*args, *EXTERNAL_SUITES] if external and not has_paths else args


def docs_command(args: list[str]) -> list[str]:
    """The mkdocs command for ``dev.py docs [--serve] [MKDOCS OPTIONS...]``; mkdocs.yml makes both strict."""
    serve = "--serve" in args
    rest = [a for a in args if a != "--serve"]
    return [str(PY), "-m", "mkdocs", "serve" if serve else "build", *rest]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0 if argv else 2
    ensure_venv()
    cmd, rest = argv[0], argv[1:]
    env = dict(os.environ)
    if cmd in {"test", "bench"}:
        ensure_peer_venv()
        env.setdefault("DTS_PEER_PYTHON", str(PEER_PY))
    if cmd == "demo":
        return subprocess.call([str(PY), str(ROOT / "samples" / "demo.py"), *rest], cwd=ROOT, env=env)
    if cmd == "test":
        return subprocess.call([str(PY), "-m", "pytest", *pytest_args(rest, env)], cwd=ROOT, env=env)
    if cmd == "bench":
        return subprocess.call([str(PY), str(ROOT / "bench" / "run_all.py"), *rest], cwd=ROOT, env=env)
    if cmd == "docs":
        return subprocess.call(docs_command(rest), cwd=ROOT, env={**env, "NO_MKDOCS_2_WARNING": "1"})
    if cmd == "run":
        return subprocess.call([str(BIN / rest[0]) if (BIN / rest[0]).exists() else rest[0], *rest[1:]],
                               cwd=ROOT, env=env)
    print(f"unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
