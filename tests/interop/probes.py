"""Run one probe script under each SDK, each in a fresh process, and return what it printed (its last line, JSON).

Microsoft's SDK runs from the peer venv with neither the repository nor ``PYTHONPATH`` on its path, so it imports
its own ``durabletask``; ours runs from the repository root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import ROOT, our_env, peer_env

PEER_SCRIPTS = Path(__file__).resolve().parent / "peer_scripts"


def probe(script: Path, python: Path | str, env: dict[str, str], cwd: str, *args: str, timeout: float = 90) -> Any:
    """The JSON ``script`` printed last when run with ``python``."""
    proc = subprocess.run(
        [str(python), str(script), *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


def side_by_side(
    script: Path, peer_py: Path, *args: str, extra_env: dict[str, str] | None = None
) -> tuple[Any, Any]:
    """(Microsoft's result, ours) for one probe."""
    theirs = probe(script, peer_py, {**peer_env(), **(extra_env or {})}, "/", *args)
    ours = probe(script, sys.executable, {**our_env(), **(extra_env or {})}, str(ROOT), *args)
    return theirs, ours
