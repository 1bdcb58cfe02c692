"""Runs one backend until stdin closes: ``ours`` (our emulator, SQLite file or memory) or ``theirs`` (official).

Prints ``ready <port>`` once it accepts calls.
"""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["ours-sqlite", "ours-memory", "theirs"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db")
    args = parser.parse_args()
    if args.kind == "theirs":
        from durabletask.testing import create_test_backend

        backend = create_test_backend(port=args.port, max_history_size=1_000_000)
        stop = backend.stop
    else:
        from dtscale_emulator.server import EmulatorServer

        server = EmulatorServer(port=args.port, db_path=args.db if args.kind == "ours-sqlite" else None,
                                in_memory=args.kind == "ours-memory")
        server.start()
        stop = server.stop
    print(f"ready {args.port}", flush=True)
    sys.stdin.read()
    stop()


if __name__ == "__main__":
    main()
