"""How long the dashboard's orchestration list takes on a large task hub (prints, never asserts).

Seeds a SQLite store with N finished instances, serves it with the emulator and the dashboard in this process (the
dashboard on the emulator's loop, as ``durabletask-emulator`` runs it), and times HTTP requests for: the first
list page, the next page (from the continuation token the first returned), a page filtered by a name that only
the last instances have (the scan limit ends it), and, for comparison, reading every instance as the list did
before it paged through the backend (``get_all_orchestration_states``).

Usage: .venv/bin/python bench/dashboard_list.py [--instances 200000] [--db PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from admin_load import seed  # noqa: E402

from dtscale_emulator.dashboard import start  # noqa: E402
from dtscale_emulator.dashboard.connect import endpoint_clients  # noqa: E402
from dtscale_emulator.ops import aio_loop  # noqa: E402
from dtscale_emulator.server import EmulatorServer  # noqa: E402
from durabletask import client  # noqa: E402
from durabletask._instance_models import OrchestrationQuery  # noqa: E402


def timed_get(url: str, rounds: int = 5) -> tuple[float, dict[str, Any]]:
    """Median milliseconds of ``rounds`` GETs, and the last answer."""
    samples = []
    body: dict[str, Any] = {}
    for _ in range(rounds):
        began = time.perf_counter()
        with urllib.request.urlopen(url) as response:
            body = json.loads(response.read())
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples), body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=200_000)
    parser.add_argument("--db", help="store file: seeded when missing, kept afterwards (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "list.db")
        if not Path(db).exists():
            began = time.perf_counter()
            seed(db, args.instances)
            print(f"seeded {args.instances:,} instances in {time.perf_counter() - began:.1f} s")
        server = EmulatorServer(port=0, db_path=db).start()
        board = aio_loop.run(start(endpoint_clients(server.address), ["default"], port=0))
        base = f"{board.url}api/hubs/default/orchestrations"
        try:
            ms, first = timed_get(base)
            print(f"first page ({len(first['items'])} rows): {ms:.1f} ms median")
            ms, second = timed_get(f"{base}?{urllib.parse.urlencode({'after': first['next']})}")
            print(f"next page ({len(second['items'])} rows, from the continuation token): {ms:.1f} ms median")
            ms, named = timed_get(f"{base}?name=nothing-has-this-name", rounds=3)
            print(f"page filtered by a name no instance has (looked at {named['scanned']} rows): {ms:.1f} ms median")
            c = client.TaskHubGrpcClient(host_address=server.address)
            try:
                began = time.perf_counter()
                everything = c.get_all_orchestration_states(OrchestrationQuery(max_instance_count=1000))
                took = (time.perf_counter() - began) * 1000
            finally:
                c.close()
            print(f"for comparison, reading all {len(everything):,} instances (the list before paging): {took:.0f} ms")
        finally:
            aio_loop.run(board.close())
            server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
