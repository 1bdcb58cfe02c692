"""The ``durabletask-emulator`` command line: options and what it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dtscale_emulator.__main__ import build_parser

ROOT = Path(__file__).resolve().parents[3]


def test_defaults_match_the_documented_ones() -> None:
    args = build_parser().parse_args([])
    assert (args.host, args.port, args.db) == ("127.0.0.1", 8080, "./durabletask-emulator.db")
    assert not args.in_memory and not args.dynamic_task_hubs and args.task_hubs == "default"


def test_options_parse() -> None:
    args = build_parser().parse_args(
        ["--port", "0", "--in-memory", "--task-hubs", "a,b", "--dynamic-task-hubs", "--lease-timeout", "5",
         "--health-ping-interval", "1.5", "--log-level", "debug"]
    )  # fmt: skip
    assert (args.port, args.in_memory, args.task_hubs, args.dynamic_task_hubs) == (0, True, "a,b", True)
    assert (args.lease_timeout, args.health_ping_interval, args.log_level) == (5.0, 1.5, "debug")


def test_prints_the_address_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--port", "0", "--log-level", "WARNING"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Durable Task emulator listening on 127.0.0.1:")
        assert int(line.rsplit(":", 1)[1]) > 0
        proc.terminate()
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
