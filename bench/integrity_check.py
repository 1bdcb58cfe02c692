"""What the integrity check at start costs as the store grows (prints, never asserts).

For each size, a store of N finished 3-activity chains is generated as ``bench/store_gen.py`` makes them (kept in
``--dir`` and reused when it is there), and these are timed on it:

  read        reading the file from start to end in 1 MiB blocks: the floor of any check that reads every page
  quick_check SQLite's ``PRAGMA quick_check`` on a read-only connection, alone
  read + quick_check    the two in a row, as the emulator runs them at start (the read fills the page cache in
              file order, so the check's reads in tree order hit it)
  mmap quick_check      the check with the file memory-mapped (as fast cold, but a read error becomes SIGBUS)
  willneed quick_check  the check after ``posix_fadvise(WILLNEED)`` on the file
  integrity   ``PRAGMA integrity_check`` (also checks every index against its table), for comparison; only up to
              ``--integrity-max`` instances, as it is far slower
  open        opening the store as the emulator does (``SqliteBackend``), with the check and with
              ``integrity_check=False``

Each is timed cold (the file's pages dropped from the OS page cache first, with ``posix_fadvise(DONTNEED)`` on
that file only, after an fsync) and warm (right after a cold run). Cold is a restart after the machine has done
other things; warm is a restart right after the emulator stopped.

Usage: .venv/bin/python bench/integrity_check.py [--sizes 10000,100000,1000000] [--dir PATH] [--integrity-max 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from store_gen import generate  # noqa: E402

from dtscale_emulator.storage import SqliteBackend  # noqa: E402


def _drop_from_cache(path: Path) -> None:
    """Evicts this file's pages from the OS page cache (no other file's), so the next read comes from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _will_need(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(fd)


def _read(path: Path) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def _pragma(path: Path, pragma: str, mmap: bool = False) -> None:
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        if mmap:
            conn.execute(f"PRAGMA mmap_size = {path.stat().st_size + (1 << 20)}")
        rows = conn.execute(f"PRAGMA {pragma}").fetchall()
    finally:
        conn.close()
    if rows != [("ok",)]:
        raise RuntimeError(f"{pragma} on {path}: {rows[:3]}")


def _then_check(path: Path, first: Callable[[Path], None]) -> None:
    first(path)
    _pragma(path, "quick_check")


def _open(path: Path, check: bool) -> None:
    SqliteBackend(str(path), integrity_check=check).close()


def _timed(path: Path, step: Callable[[], None]) -> tuple[float, float]:
    """Seconds cold, then warm."""
    _drop_from_cache(path)
    times = []
    for _ in range(2):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return times[0], times[1]


def measure(path: Path, instances: int, integrity_max: int) -> dict[str, Any]:
    steps: dict[str, Callable[[], None]] = {
        "read": lambda: _read(path),
        "quick_check": lambda: _pragma(path, "quick_check"),
        "read + quick_check": lambda: _then_check(path, _read),
        "mmap quick_check": lambda: _pragma(path, "quick_check", mmap=True),
        "willneed quick_check": lambda: _then_check(path, _will_need),
        "open with check": lambda: _open(path, True),
        "open without check": lambda: _open(path, False),
    }
    if instances <= integrity_max:
        steps["integrity_check"] = lambda: _pragma(path, "integrity_check")
    result: dict[str, Any] = {"instances": instances, "mib": path.stat().st_size / 2**20}
    for name, step in steps.items():
        result[name] = _timed(path, step)
    return result


def _store(folder: Path, instances: int) -> Path:
    path = folder / f"store-{instances}.db"
    if not path.exists():
        began = time.perf_counter()
        generate(str(path), instances)
        print(f"  generated {instances:,} instances in {time.perf_counter() - began:.0f} s", flush=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--dir", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "dts-integrity-bench"))
    parser.add_argument("--integrity-max", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for instances in (int(s) for s in args.sizes.split(",")):
        results.append(measure(_store(folder, instances), instances, args.integrity_max))
        r = results[-1]
        print(f"  {instances:>9,} instances, {r['mib']:,.0f} MiB: " + ", ".join(
            f"{k} {v[0]:.2f}/{v[1]:.2f} s" for k, v in r.items() if isinstance(v, tuple)), flush=True)  # fmt: skip
    names = [
        "read", "quick_check", "read + quick_check", "mmap quick_check", "willneed quick_check", "integrity_check",
        "open with check", "open without check",
    ]  # fmt: skip
    print(f"\nseconds, cold / warm page cache; load {os.getloadavg()[0]:.1f}")
    print(f"{'instances':>10} {'MiB':>7} " + " ".join(f"{n:>19}" for n in names))
    for r in results:
        cells = [f"{r[n][0]:.2f} / {r[n][1]:.2f}" if n in r else "-" for n in names]
        print(f"{r['instances']:>10,} {r['mib']:>7,.0f} " + " ".join(f"{c:>19}" for c in cells))
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
