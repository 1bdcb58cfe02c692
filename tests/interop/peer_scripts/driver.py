"""Command-line entry for one interop scenario or one long-running worker role, under whichever SDK is importable.

Usage:
    python driver.py MODE ADDRESS TASKHUB run SCENARIO [SCENARIO ...]  -> one JSON line per scenario, in order
    python driver.py MODE ADDRESS TASKHUB serve ROLE                   -> runs a worker until stdin closes

MODE is ``dts`` (DurableTaskScheduler client and worker with a task hub) or ``grpc`` (plain client and worker).
``{scenario}`` in TASKHUB is replaced by each scenario's name, so scenarios can have task hubs of their own.
Only the interop folder and tests/support are put on ``sys.path``: the SDK comes from the interpreter's own
environment.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # type: ignore[import-not-found]
import runners  # type: ignore[import-not-found]


def main(argv: list[str]) -> int:
    mode, address, taskhub, command, *names = argv
    if command == "serve":
        with harness.open_harness(mode, address, taskhub, dict(os.environ), os.getcwd()) as h:
            harness.serve(h, names[0])
        return 0
    for name in names:
        print(json.dumps(run(mode, address, taskhub.replace("{scenario}", name), name)), flush=True)
    return 0


def run(mode: str, address: str, taskhub: str, name: str) -> dict[str, object]:
    """One scenario in its own task hub and harness; a failure is reported, not raised, so the batch goes on."""
    try:
        with harness.open_harness(mode, address, taskhub, dict(os.environ), os.getcwd()) as h:
            result = runners.SCENARIOS[name](h)
    except Exception:
        return {"scenario": name, "error": traceback.format_exc()}
    return {"scenario": name, "result": result}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
