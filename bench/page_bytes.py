"""What bounding listing pages by bytes costs beside bounding them by count only (prints, never asserts).

An in-memory emulator store is seeded with N instances (most with a small input, a tenth with a larger one),
then every instance is listed through the emulator's own query code, page after page with continuation tokens,
twice per shape: with pages bounded by count only (as before) and by count and bytes (as shipped). Both walks
run in this process, interleaved round by round, so they share the machine's state.

Printed per shape: the walk's time (median of the rounds), pages, the largest page in bytes, and how many of its
pages a client with gRPC's default 4 MiB receive limit could not have read.

Usage: .venv/bin/python bench/page_bytes.py [--instances 20000] [--rounds 5] [--large-input 65536]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dtscale_emulator.engine import queries  # noqa: E402
from dtscale_emulator.engine.delivery import StartOptions  # noqa: E402
from dtscale_emulator.engine.instances import Engine  # noqa: E402
from dtscale_emulator.engine.pages import CLIENT_RECEIVE_BYTES, PAGE_BYTES  # noqa: E402
from dtscale_emulator.ops.clock import ManualClock  # noqa: E402
from dtscale_emulator.protocol import pb  # noqa: E402
from dtscale_emulator.storage.sqlite import SqliteBackend  # noqa: E402

HUB = "default"


def seed(engine: Engine, count: int, large_input: int) -> None:
    small, large = '"' + "s" * 200 + '"', '"' + "L" * large_input + '"'
    for n in range(count):
        engine.create(HUB, StartOptions(f"i-{n:08}", "Orch", input=large if n % 10 == 0 else small))


Walk = tuple[float, int, int, int]  # seconds, pages, largest page (bytes), pages over a client's limit


def walk(list_page: Callable[[str | None], tuple[int, str | None]]) -> Walk:
    began = time.perf_counter()
    pages = largest = over = 0
    token: str | None = None
    while True:
        size, token = list_page(token)
        pages, largest = pages + 1, max(largest, size)
        over += size > CLIENT_RECEIVE_BYTES
        if token is None:
            return time.perf_counter() - began, pages, largest, over


def query_walker(engine: Engine, page: int, payloads: bool, max_bytes: int | None) -> Callable[[], Walk]:
    def list_page(token: str | None) -> tuple[int, str | None]:
        query = pb.InstanceQuery(maxInstanceCount=page, fetchInputsAndOutputs=payloads)
        if token is not None:
            query.continuationToken.value = token
        answer = queries.query_instances(engine, HUB, query, max_bytes)
        return answer.ByteSize(), answer.continuationToken.value if answer.HasField("continuationToken") else None

    return lambda: walk(list_page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--large-input", type=int, default=64 * 1024, help="bytes of every tenth instance's input")
    args = parser.parse_args()
    engine = Engine(SqliteBackend(None), ManualClock())
    began = time.perf_counter()
    seed(engine, args.instances, args.large_input)
    print(
        f"{args.instances:,} instances (every tenth with a {args.large_input:,}-byte input), seeded in "
        f"{time.perf_counter() - began:.1f} s; byte bound {PAGE_BYTES:,} bytes, client limit "
        f"{CLIENT_RECEIVE_BYTES:,}; median of {args.rounds} rounds"
    )
    print(f"{'listing':<34}{'bound':>8}{'walk ms':>10}{'pages':>8}{'largest page':>15}{'unreadable':>12}")
    for page, payloads in ((100, False), (1000, False), (100, True), (1000, True)):
        shape = f"query, page {page}" + (", with inputs" if payloads else "")
        walkers = {
            "count": query_walker(engine, page, payloads, None),
            "bytes": query_walker(engine, page, payloads, PAGE_BYTES),
        }
        results: dict[str, list[Walk]] = {name: [] for name in walkers}
        for _ in range(args.rounds):
            for name, run in walkers.items():
                results[name].append(run())
        for name, runs in results.items():
            seconds = statistics.median(r[0] for r in runs)
            _, pages, largest, over = runs[-1]
            print(f"{shape:<34}{name:>8}{seconds * 1000:>10.1f}{pages:>8}{largest:>15,}{over:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
