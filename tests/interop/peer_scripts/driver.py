"""Command-line entry for one interop scenario or one long-running worker role, under whichever SDK is importable.

Usage:
    python driver.py MODE ADDRESS TASKHUB run SCENARIO   -> prints the scenario's result as one JSON line
    python driver.py MODE ADDRESS TASKHUB serve ROLE     -> runs a worker until stdin closes

MODE is ``dts`` (DurableTaskScheduler client and worker with a task hub) or ``grpc`` (plain client and worker).
Only the interop folder is put on ``sys.path``: the SDK comes from the interpreter's own environment.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import runners  # type: ignore[import-not-found]


def main(argv: list[str]) -> int:
    mode, address, taskhub, command, name = argv
    child_env = dict(os.environ)
    with runners.harness(mode, address, taskhub, child_env, os.getcwd()) as harness:
        if command == "serve":
            runners.serve(harness, name)
            return 0
        result = runners.SCENARIOS[name](harness)
    print(json.dumps({"result": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
