"""The emulator as stored work grows: a store of N finished orchestrations, generated directly (prints, never asserts).

Steps, on one SQLite file:
  generate    N finished 3-activity chains (12 history events each, as the emulator writes them) straight into
              the store with executemany in large transactions, in order of creation (so the row order is the
              one an emulator that ran them would have left); prints the rate and the bytes per instance
  restart     an emulator process opens the store: seconds from spawn to the first answered GetInstance
  get         GetInstance of random stored instances
  list        QueryInstances / ListInstanceIds with each filter and combination: first page and next page
  throughput  3-activity chains scheduled and completed by a worker, on an empty store and on this one,
              interleaved (empty, full, empty, full) in the same minutes; ratio full / empty
  purge       filter purges of consecutive created ranges while other threads start instances, raise events and
              ping; p99 of a start during it, and before it (the machine's own floor)

With ``--baseline TREE`` (a checkout of another revision, e.g. ``git worktree add /tmp/base main``) every step but
the listings also runs that tree's emulator, on a copy of the store laid out as that tree lays it out, interleaved
with this tree's, and prints both with the ratio; ``upgrade`` then times this tree opening the baseline's store.

Usage: .venv/bin/python bench/store_scale.py [--instances 1000000] [--db PATH (kept and reused)] [--skip purge,...]
       [--baseline TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import admin_load  # noqa: E402
import grpc  # noqa: E402
import run_all  # noqa: E402
from google.protobuf import empty_pb2, wrappers_pb2  # noqa: E402
from store_gen import DAY, HUB, _ts, generate, table_sizes  # noqa: E402

from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402

#: The trees measured: ``None`` is this checkout; a path is a baseline checkout (--baseline).
Tree = str | None


def _spawn_tree(tree: Tree, args: list[str]) -> subprocess.Popen[str]:
    """A bench script (from this tree's bench/) run against ``tree``'s emulator and SDK."""
    if tree is None:
        return run_all._spawn(run_all.OURS_PY, args, for_peer=False)
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    with run_all.LOG.open("a") as log:
        return subprocess.Popen(
            [run_all.OURS_PY, *args], cwd=HERE, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            text=True,
        )  # fmt: skip


_EAGER = [
    ("grpc.initial_reconnect_backoff_ms", 10),
    ("grpc.min_reconnect_backoff_ms", 10),
    ("grpc.max_reconnect_backoff_ms", 10),
]


@contextmanager
def emulator(db: str, tree: Tree = None) -> Iterator[tuple[str, float, subprocess.Popen[str]]]:
    """An emulator process of ``tree`` on ``db``; yields (address, seconds from spawn to the first answered call)."""
    port = run_all._free_port()
    began = time.perf_counter()
    proc = _spawn_tree(tree, ["backend_proc.py", "ours-sqlite", "--port", str(port), "--db", db])
    address = f"127.0.0.1:{port}"
    # The channel is made before the server listens, so its first connection is refused; gRPC's default
    # reconnect backoff (1 s, jittered) would then be most of what is measured. Retry every 10 ms instead.
    channel = grpc.insecure_channel(address, options=_EAGER)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    try:
        while True:
            try:
                stub.GetInstance(pb.GetInstanceRequest(instanceId="probe"), timeout=5, wait_for_ready=True)
                break
            except grpc.RpcError as error:
                if error.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    break  # answered (NOT_FOUND or similar): the server is serving
        ready = time.perf_counter() - began
        yield address, ready, proc
    finally:
        channel.close()
        run_all._close(proc)


def _ms(call: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = call()
    return (time.perf_counter() - began) * 1000, result


def point_reads(stub: Any, ids: list[str], count: int = 1000) -> dict[str, float]:
    """GetInstance of random stored instances, each followed by an empty Hello: the store's part of a get is a
    tenth of a millisecond, so its tail is the round trip's, and the Hello beside it shows that floor."""
    times: list[float] = []
    floor: list[float] = []
    for _ in range(count):
        times.append(_ms(lambda: stub.GetInstance(pb.GetInstanceRequest(instanceId=random.choice(ids)), timeout=10))[0])
        floor.append(_ms(lambda: stub.Hello(empty_pb2.Empty(), timeout=10))[0])
    times.sort()
    floor.sort()
    p99 = int(count * 0.99)
    return {"p50": statistics.median(times), "p99": times[p99], "n": count, "hello_p99": floor[p99]}


def list_queries(now: int, ids: list[str]) -> list[tuple[str, Any]]:
    """(label, request) for each listing measured; QueryInstances unless the request is a ListInstanceIdsRequest."""
    s = pb.OrchestrationStatus
    hour_ago = now - DAY - 5 * DAY

    def q(**kw: Any) -> pb.InstanceQuery:
        return pb.InstanceQuery(maxInstanceCount=kw.pop("page", 100), **kw)

    def created(start: int, length: int) -> dict[str, Any]:
        return {"createdTimeFrom": _ts(start), "createdTimeTo": _ts(start + length)}

    prefix2, prefix4 = ids[len(ids) // 2][:2], ids[len(ids) // 3][:4]
    return [
        ("all", q()),
        ("all, with payloads", q(fetchInputsAndOutputs=True)),
        ("all, page of 1000 with payloads", q(page=1000, fetchInputsAndOutputs=True)),
        ("status COMPLETED (90 %)", q(runtimeStatus=[s.Value("ORCHESTRATION_STATUS_COMPLETED")])),
        ("status RUNNING (2 %)", q(runtimeStatus=[s.Value("ORCHESTRATION_STATUS_RUNNING")])),
        ("status SUSPENDED (none)", q(runtimeStatus=[s.Value("ORCHESTRATION_STATUS_SUSPENDED")])),
        ("status RUNNING or FAILED", q(runtimeStatus=[0, 3], fetchInputsAndOutputs=True)),
        ("created in one day (3 %)", q(**created(hour_ago, DAY))),
        ("created in one hour (0.14 %)", q(**created(hour_ago, DAY // 24))),
        ("created in 5 minutes", q(**created(hour_ago, DAY // 288))),
        ("created in the future (none)", q(**created(now + DAY, DAY))),
        (f"prefix {prefix2!r} (1/256)", q(instanceIdPrefix=wrappers_pb2.StringValue(value=prefix2))),
        (f"prefix {prefix4!r} (a few)", q(instanceIdPrefix=wrappers_pb2.StringValue(value=prefix4))),
        ("COMPLETED + created in one day", q(runtimeStatus=[1], **created(hour_ago, DAY))),
        ("RUNNING + created in one hour", q(runtimeStatus=[0], **created(hour_ago, DAY // 24))),
        ("SUSPENDED + created in 10 days", q(runtimeStatus=[7], **created(hour_ago - 9 * DAY, 10 * DAY))),
        (
            "TERMINATED + created in 10 days, payloads",
            q(runtimeStatus=[5], fetchInputsAndOutputs=True, **created(hour_ago - 9 * DAY, 10 * DAY)),
        ),
        (
            f"prefix {prefix2!r} + FAILED, payloads",
            q(runtimeStatus=[3], fetchInputsAndOutputs=True, instanceIdPrefix=wrappers_pb2.StringValue(value=prefix2)),
        ),
        ("ids: all finished", pb.ListInstanceIdsRequest(pageSize=100)),
        (
            "ids: COMPLETED, completed in one hour",
            pb.ListInstanceIdsRequest(
                pageSize=100,
                runtimeStatus=[1],
                completedTimeFrom=_ts(hour_ago),
                completedTimeTo=_ts(hour_ago + DAY // 24),
            ),
        ),
        (
            "ids: completed in 20 days",
            pb.ListInstanceIdsRequest(
                pageSize=100, completedTimeFrom=_ts(hour_ago - 19 * DAY), completedTimeTo=_ts(hour_ago + DAY)
            ),
        ),
    ]


def _pages(stub: Any, request: Any) -> tuple[float, float, int]:
    """(first page ms, next page ms, rows on the first page): the best of three, each page read fresh."""
    is_ids = isinstance(request, pb.ListInstanceIdsRequest)
    first, second, rows = [], [], 0
    for _ in range(3):
        if is_ids:
            ms, answer = _ms(lambda: stub.ListInstanceIds(request, timeout=30))
            rows, token = (
                len(answer.instanceIds),
                answer.lastInstanceKey if answer.HasField("lastInstanceKey") else None,
            )
        else:
            ms, answer = _ms(lambda: stub.QueryInstances(pb.QueryInstancesRequest(query=request), timeout=30))
            rows = len(answer.orchestrationState)
            token = answer.continuationToken if answer.HasField("continuationToken") else None
        first.append(ms)
        if token is not None:
            nxt = pb.ListInstanceIdsRequest() if is_ids else pb.InstanceQuery()
            nxt.CopyFrom(request)
            if is_ids:
                nxt.lastInstanceKey.CopyFrom(token)
                second.append(_ms(lambda n=nxt: stub.ListInstanceIds(n, timeout=30))[0])
            else:
                nxt.continuationToken.CopyFrom(token)
                second.append(_ms(lambda n=nxt: stub.QueryInstances(pb.QueryInstancesRequest(query=n), timeout=30))[0])
    return min(first), (min(second) if second else float("nan")), rows


def _io(pid: int) -> dict[str, int]:
    """The process's bytes read and written through system calls so far (Linux /proc; zeros elsewhere). SQLite
    reads a page the OS has cached with a read() call, so ``rchar`` counts its page-cache misses (database and
    log), and ``wchar`` the log frames and checkpoint copies it wrote."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return {"rchar": 0, "wchar": 0}
    return {k: int(v) for k, v in (line.split(": ") for line in lines) if k in ("rchar", "wchar")}


def throughput_round(db: str, count: int, tree: Tree = None) -> tuple[float, float, dict[str, float]]:
    """(orchestrations per second, emulator CPU ms per orchestration, emulator KiB read and written per
    orchestration) of ``count`` 3-activity chains on an emulator over ``db``, one worker process."""
    with emulator(db, tree) as (address, _, proc):
        worker = _spawn_tree(tree, ["worker_proc.py", address])
        try:
            run_all._await_ready(worker, "worker")
            before = run_all._cpu_seconds(proc.pid) or 0.0
            io_before = _io(proc.pid)
            client = _spawn_tree(tree, ["client_proc.py", address, "throughput", str(count)])
            out, _ = client.communicate(timeout=1800)
            result = json.loads(out.strip().splitlines()[-1])
            cpu = (run_all._cpu_seconds(proc.pid) or 0.0) - before
            io = {k: (v - io_before[k]) / 1024 / count for k, v in _io(proc.pid).items()}
        finally:
            run_all._close(worker)
    return float(result["per_second"]), cpu * 1000 / count, io


def purge_beside_calls(address: str, created_to: int) -> dict[str, Any]:
    """A filter purge of everything created before ``created_to``, with admin_load.py's probes running meanwhile."""
    recorder, stop, streams = admin_load.Recorder(), threading.Event(), []  # type: ignore[var-annotated]
    started: dict[str, float] = {}
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    threads = [
        threading.Thread(target=admin_load._starter, args=(stub, recorder, stop, started)),
        threading.Thread(target=admin_load._raiser, args=(stub, recorder, stop)),
        threading.Thread(target=admin_load._pinger, args=(stub, recorder, stop)),
        threading.Thread(target=admin_load._receiver, args=(stub, recorder, started, streams), daemon=True),
    ]
    for t in threads:
        t.start()
    time.sleep(1.0)
    began = time.time()
    request = pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter(createdTimeTo=_ts(created_to)))
    purged = stub.PurgeInstances(request, timeout=3600).deletedInstanceCount
    ended = time.time()
    time.sleep(0.5)
    stop.set()
    for t in threads[:3]:
        t.join()
    for call in streams:
        call.cancel()
    channel.close()
    samples = recorder.by_phase({"before": (0.0, began), "purge": (began, ended)})
    latency = {f"{p}/{k}": admin_load._summary(v) for (p, k), v in sorted(samples.items())}
    return {"purged": purged, "seconds": ended - began, "latency_ms": latency}


_CONFORM = """
import os, sqlite3, sys, tempfile, time
from dtscale_emulator.storage import SqliteBackend
with tempfile.TemporaryDirectory() as folder:
    fresh = os.path.join(folder, "fresh.db")
    SqliteBackend(fresh).close()
    conn = sqlite3.connect(fresh)
    wanted = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
conn = sqlite3.connect(sys.argv[1])
for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall():
    if name not in wanted:
        conn.execute(f"DROP INDEX {name}")
conn.close()
began = time.perf_counter()
backend = SqliteBackend(sys.argv[1])
backend.release_all_leases()
backend.close()
print(time.perf_counter() - began)
"""


def open_seconds(db: str, tree: Tree = None) -> float:
    """Seconds ``tree``'s store takes to open ``db`` and release leftover leases (what a restart adds), in a
    process of its own; its indexes are first made the ones that tree creates (it builds those it misses, and
    those it does not know are dropped), so a baseline is measured on the layout it would have made itself."""
    proc = _spawn_tree(tree, ["-c", _CONFORM, db])
    out, _ = proc.communicate(timeout=3600)
    return float(out.strip().splitlines()[-1])


def _label(tree: Tree) -> str:
    if tree is None:
        return "this tree"
    rev = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout
    return f"baseline {rev.strip() or tree}"


def warm(path: str) -> None:
    """Reads the whole store once, so it starts in the OS page cache whatever ran before (on a shared machine the
    cache also holds other people's files, and a store left cold reads its pages from disk: several times slower)."""
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def restart_step(stores: dict[Tree, str], rounds: int) -> None:
    seconds: dict[Tree, list[float]] = {tree: [] for tree in stores}
    for _ in range(rounds):
        for tree, db in stores.items():
            with emulator(db, tree) as (_, ready, _proc):
                seconds[tree].append(ready)
    print("restart: seconds from spawning the emulator process to its first answered GetInstance (target <= 1 s)")
    for tree, values in seconds.items():
        print(f"  {_label(tree):24s} {', '.join(f'{v:.2f}' for v in values)} s, median {statistics.median(values):.2f}")
    _ratio("restart", {t: statistics.median(v) for t, v in seconds.items()})


def _ratio(what: str, medians: dict[Tree, float]) -> None:
    if len(medians) == 2 and medians.get(None) and list(medians.values())[1]:
        base = next(v for t, v in medians.items() if t is not None)
        print(f"  {what}: this tree / baseline = {medians[None] / base:.2f}", flush=True)


def throughput_step(stores: dict[Tree, str], folder: str, rounds: int, count: int) -> None:
    runs = {(tree, which): [] for tree in stores for which in ("empty", "full")}  # type: dict[tuple[Tree, str], list[tuple[float, float, dict[str, float]]]]
    for r in range(rounds):
        for tree, db in stores.items():
            warm(db)
            for which in ("empty", "full"):
                path = db if which == "full" else str(Path(folder) / f"empty-{r}-{len(runs)}-{tree is None}.db")
                runs[(tree, which)].append(throughput_round(path, count, tree))
    print(f"throughput: {count} chains per round, interleaved empty/full and tree by tree, x {rounds} (target >= 90 %)")
    ratios = {}
    for tree in stores:
        e = statistics.median(r[0] for r in runs[(tree, "empty")])
        f = statistics.median(r[0] for r in runs[(tree, "full")])
        ratios[tree] = f / e
        cpu = {w: statistics.median(r[1] for r in runs[(tree, w)]) for w in ("empty", "full")}
        io = {(w, k): statistics.median(r[2].get(k, 0.0) for r in runs[(tree, w)])
              for w in ("empty", "full") for k in ("rchar", "wchar")}  # fmt: skip
        print(
            f"  {_label(tree):24s} empty {', '.join(f'{r[0]:.0f}' for r in runs[(tree, 'empty')])}/s; full "
            f"{', '.join(f'{r[0]:.0f}' for r in runs[(tree, 'full')])}/s; full / empty (medians) {f / e:.0%}; "
            f"emulator CPU per orchestration empty {cpu['empty']:.2f} ms, full {cpu['full']:.2f} ms; "
            f"KiB read / written per orchestration empty {io[('empty', 'rchar')]:.0f} / {io[('empty', 'wchar')]:.0f}, "
            f"full {io[('full', 'rchar')]:.0f} / {io[('full', 'wchar')]:.0f}",
            flush=True,
        )
    _ratio("full / empty", ratios)


def purge_step(stores: dict[Tree, str], instances: int, rounds: int, share: float) -> None:
    """Filter purges of consecutive created ranges (``share`` of the store each), tree after tree, each beside
    the probes of admin_load.py."""
    conn = sqlite3.connect(next(iter(stores.values())))
    cuts = [
        conn.execute(
            "SELECT created_at FROM instances WHERE hub = ? ORDER BY created_at LIMIT 1 OFFSET ?",
            (HUB, int(instances * share * (r + 1))),
        ).fetchone()[0]
        for r in range(rounds)
    ]
    conn.close()
    print(f"purge: filter purges of {share:.1%} of the store each (oldest first, by created time), tree after tree")
    rates: dict[Tree, list[float]] = {tree: [] for tree in stores}
    for cut in cuts:
        for tree, db in stores.items():
            warm(db)
            with emulator(db, tree) as (address, _, _proc):
                r = purge_beside_calls(address, cut)
            nan = {"p50": float("nan"), "p99": float("nan"), "n": 0}
            start = r["latency_ms"].get("purge/start", nan)
            calm = r["latency_ms"].get("before/start", nan)
            others = [f"{k.split('/')[1]} p99 {v['p99']:.0f}" for k, v in r["latency_ms"].items()
                      if k.startswith("purge/") and k != "purge/start"]  # fmt: skip
            rates[tree].append(r["purged"] / r["seconds"])
            print(
                f"  {_label(tree):24s} {r['purged']:7,} in {r['seconds']:5.1f} s = {rates[tree][-1]:6,.0f}/s "
                f"(target >= 5,000/s); start during it p50 {start['p50']:.1f} ms, p99 {start['p99']:.1f} ms "
                f"(target <= 100 ms; n={start['n']}), before it p50 {calm['p50']:.1f} / p99 {calm['p99']:.1f} ms; "
                f"{', '.join(others)} ms",
                flush=True,
            )
    _ratio("purge rate (medians)", {t: statistics.median(v) for t, v in rates.items()})


def _stored_ids(db: str, count: int = 2000) -> list[str]:
    conn = sqlite3.connect(db)
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT instance_id FROM instances WHERE hub = ? AND instance_id > ? LIMIT ?",
            (HUB, uuid.uuid4().hex, count),
        )
    ]
    conn.close()
    return ids


def _generate(db: str, instances: int) -> None:
    g = generate(db, instances)
    print(
        f"generate: {instances:,} finished 3-activity chains (12 history events each) in "
        f"{g['seconds']:.1f} s = {g['per_second']:,.0f} instances/s; store {g['bytes'] / 2**20:,.0f} MiB = "
        f"{g['bytes_per_instance']:,.0f} bytes per instance (rows + indexes)",
        flush=True,
    )
    sizes = table_sizes(db)
    if sizes:
        print(
            "  by table/index (bytes per instance): "
            + ", ".join(f"{name} {size / instances:.0f}" for name, size in list(sizes.items())[:9]),
            flush=True,
        )


def reads_step(db: str, ids: list[str], stores: dict[Tree, str], lists: bool) -> None:
    for tree, path in stores.items():
        warm(path)
        with emulator(path, tree) as (address, _, _proc):
            channel = grpc.insecure_channel(address)
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            stub.Hello(empty_pb2.Empty(), timeout=10)
            g = point_reads(stub, ids)
            print(
                f"get ({_label(tree)}): GetInstance of random stored instances, n={g['n']}: p50 {g['p50']:.2f} ms, "
                f"p99 {g['p99']:.2f} ms (target <= 2 ms); an empty Hello between them p99 {g['hello_p99']:.2f} ms",
                flush=True,
            )
            if lists and tree is None:
                print("list: first page / next page, best of 3, ms (target <= 20 ms each); rows on the first page")
                now = int(time.time() * 1_000_000)
                worst = 0.0
                for label, request in list_queries(now, ids):
                    first, second, rows = _pages(stub, request)
                    worst = max(worst, first, second if second == second else 0.0)
                    print(f"  {label:44s} {first:7.1f} / {second:7.1f}   {rows:5d} rows", flush=True)
                print(f"  slowest page: {worst:.1f} ms")
            channel.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--db", help="store file: generated when missing, kept afterwards (default: a temporary one)")
    parser.add_argument("--skip", default="", help="steps to leave out: restart,get,list,throughput,purge,upgrade")
    parser.add_argument("--baseline", help="a checkout of another revision to measure beside this one")
    parser.add_argument(
        "--baseline-db",
        help="the baseline's own store (made by that tree's store_gen) when it cannot open this tree's layout; it is "
        "used in place (the upgrade step converts it last); default: a copy of --db",
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of restart, throughput and purge")
    parser.add_argument("--orchestrations", type=int, default=300, help="chains per throughput round")
    parser.add_argument("--purge-share", type=float, default=0.05, help="share of the store each purge removes")
    parser.add_argument("--purge-rounds", type=int, help="purges per tree (default: --rounds)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(args.db) if args.db else None) as folder:
        db = args.db or str(Path(folder) / "store.db")
        if not os.path.exists(db):
            _generate(db, args.instances)
        stores: dict[Tree, str] = {None: db}
        if args.baseline and args.baseline_db:
            stores[args.baseline] = args.baseline_db
        elif args.baseline:
            base = str(Path(folder) / "baseline.db")
            shutil.copyfile(db, base)
            print(f"baseline store: copied and given {_label(args.baseline)}'s indexes", flush=True)
            stores[args.baseline] = base
        ids = _stored_ids(db)
        for tree, path in stores.items():
            print(f"open ({_label(tree)}): opening the store, schema check and lease release, "
                  f"{open_seconds(path, tree) * 1000:.0f} ms", flush=True)  # fmt: skip
        if "restart" not in skip:
            restart_step(stores, max(args.rounds, 3))
        if "get" not in skip:
            reads_step(db, ids, stores, "list" not in skip)
        if "throughput" not in skip:
            throughput_step(stores, folder, args.rounds, args.orchestrations)
        if "purge" not in skip:
            purge_step(stores, args.instances, args.purge_rounds or args.rounds, args.purge_share)
        if args.baseline and "upgrade" not in skip:
            began = time.perf_counter()
            upgraded = open_seconds(stores[args.baseline])
            print(
                f"upgrade: this tree opening the baseline's store (its one-time index changes included) "
                f"{upgraded:.2f} s (process {time.perf_counter() - began:.2f} s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
