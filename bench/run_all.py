"""Runs every benchmark side by side and prints figures and ratios (never asserts; the machine is noisy).

Pairs measured in the same run:
  ours      our SDK on our emulator, persistent SQLite
  ours-mem  our SDK on our emulator, in memory
  theirs    Microsoft's SDK on its in-memory test backend (isolated venv)
  mixed     Microsoft's SDK on our emulator (separates SDK cost from backend cost)

With --backend URL [--taskhub NAME] both SDKs run against that DTS endpoint instead (the public emulator
container, managed DTS, a separate emulator of ours), through their DurableTaskScheduler classes:
  ours      our SDK on the endpoint
  theirs    Microsoft's SDK on the endpoint
(throughput, latency, fan-out and chains; the credential comes from DTS_TEST_TOKEN or DTS_TEST_AUTHENTICATION,
see tests/support/endpoint.py).

Section 7b (bench/worker_e2e.py) runs each SDK's worker end to end on our emulator, beside a worker with no SDK.
Section 7c (bench/grpc_polling.py) measures what the SDK's gRPC client polling saves per unary call.
Sections 7 (worker: bench/worker_cpu.py) and 8 (store: bench/store_scale.py) measure the worker alone on a feed of
pre-built work items, and the emulator over a generated store (100,000 instances by default, --store-instances
1000000 for the full size; the generation alone then takes about two minutes).

Section 9 (history export: bench/history_export.py) exports 10,000 finished instances of a generated store with
`durabletask export`, our export job and Microsoft's, each on its own copy of the store.

Usage: python3 dev.py bench [--quick] [--only transport,throughput,latency,fan_out,chain,replay,admin,worker,
       worker_e2e,grpc_polling,store,history_export]
       [--backend URL] [--store-instances N]
   or: DTS_PEER_PYTHON=<python with durabletask 1.12> .venv/bin/python bench/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import targets

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OURS_PY = sys.executable
PEER_PY = os.environ.get("DTS_PEER_PYTHON") or str(ROOT / ".peer-venv" / "bin" / "python")
# The processes' own logs (worker INFO lines, reconnect warnings) go here instead of the report.
LOG = Path(tempfile.gettempdir()) / "dts-bench.log"

# RPCs one 3-activity chain needs at the least: StartInstance + WaitForInstanceCompletion, then per work item one
# streamed message and one completion call: 4 orchestrator turns and 3 activities.
CHAIN3_RPCS = 2 + 2 * (4 + 3)
CHAIN3_UNARY = 2 + 4 + 3
CHAIN3_STREAMED = CHAIN3_RPCS - CHAIN3_UNARY
CORES = os.cpu_count() or 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(for_peer: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not for_peer:
        env["PYTHONPATH"] = str(ROOT)
    return env


def _spawn(python: str, args: list[str], *, for_peer: bool) -> subprocess.Popen[str]:
    # cwd=HERE: the scripts import workloads.py; the peer must never see our package on its path.
    with LOG.open("a") as log:
        return subprocess.Popen(
            [python, *args],
            cwd=HERE,
            env=_env(for_peer),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )


def _await_ready(proc: subprocess.Popen[str], what: str, word: str = "ready") -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(word):
        raise RuntimeError(f"{what} did not start (exit {proc.poll()})")


def _close(proc: subprocess.Popen[str]) -> None:
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# Set by --backend: the endpoint and task hub every pair then uses instead of a backend process of its own.
EXTERNAL: dict[str, str] = {}


@contextmanager
def external_pair(sdk: str) -> Iterator[tuple[str, str, list[subprocess.Popen[str]]]]:
    """A worker process of ``sdk`` on the external endpoint; yields (client python, address, [worker])."""
    sdk_py = PEER_PY if sdk == "theirs" else OURS_PY
    address, taskhub = EXTERNAL["address"], EXTERNAL["taskhub"]
    w = _spawn(sdk_py, ["external_proc.py", "worker", address, taskhub], for_peer=sdk == "theirs")
    try:
        _await_ready(w, f"worker {sdk}")
        yield sdk_py, address, [w]
    finally:
        _close(w)


@contextmanager
def pair(
    sdk: str, backend: str, worker_script: str = "worker_proc.py", worker_args: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, list[subprocess.Popen[str]]]]:
    """Starts a backend process and a worker process; yields (client python, address, [backend, worker])."""
    if EXTERNAL:
        with external_pair(sdk) as found:
            yield found
        return
    port = _free_port()
    tmp = tempfile.TemporaryDirectory()
    backend_py = PEER_PY if backend == "theirs" else OURS_PY
    sdk_py = PEER_PY if sdk == "theirs" else OURS_PY
    args = ["backend_proc.py", backend, "--port", str(port), "--db", str(Path(tmp.name) / "bench.db")]
    b = _spawn(backend_py, args, for_peer=backend == "theirs")
    w = None
    try:
        _await_ready(b, f"backend {backend}")
        address = f"localhost:{port}"
        w = _spawn(sdk_py, [worker_script, address, *worker_args], for_peer=sdk == "theirs")
        _await_ready(w, f"worker {sdk}")
        yield sdk_py, address, [b, w]
    finally:
        if w is not None:
            _close(w)
        _close(b)
        tmp.cleanup()


def _json_run(python: str, args: list[str], *, for_peer: bool, timeout: float = 900) -> dict[str, Any]:
    out = subprocess.run([python, *args], cwd=HERE, env=_env(for_peer), capture_output=True, text=True, timeout=timeout)
    with LOG.open("a") as log:
        log.write(out.stderr)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


SELECTED: set[str] = set()  # pairs chosen with --pairs; the others are skipped
PAIRS = {
    "ours": ("ours", "ours-sqlite"),
    "ours-mem": ("ours", "ours-memory"),
    "theirs": ("theirs", "theirs"),
    "mixed": ("theirs", "ours-sqlite"),
}


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a process has used so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scenario(
    name: str, scenario_name: str, size: int, worker: tuple[str, ...] = ("worker_proc.py",)
) -> dict[str, Any]:
    """Runs one client scenario; the result also has the CPU seconds the backend and worker spent on it.

    ``worker`` is the worker process's script and its arguments after the address.
    """
    sdk, backend = PAIRS[name]
    with pair(sdk, backend, worker[0], worker[1:]) as (python, address, procs):
        before = [_cpu_seconds(p.pid) for p in procs]
        args = ["client_proc.py", address, scenario_name, str(size)]
        if EXTERNAL:
            args = ["external_proc.py", "client", address, EXTERNAL["taskhub"], scenario_name, str(size)]
        result = _json_run(python, args, for_peer=sdk == "theirs")
        after = [_cpu_seconds(p.pid) for p in procs]
    if EXTERNAL:  # the backend is elsewhere: only the worker's CPU is known
        result["cpu"] = [None, None]
        return result
    # Includes the client's one warm-up orchestration; negligible beside the measured ones.
    result["cpu"] = [None if b is None or a is None else a - b for b, a in zip(before, after, strict=True)]
    return result


def _cpu_per_item(r: dict[str, Any], items: int) -> str:
    backend, worker = r["cpu"]
    if backend is None or worker is None:
        return ""
    return f"   CPU/orchestration: backend {backend * 1000 / items:.2f} ms, worker {worker * 1000 / items:.2f} ms"


def transport(backend: str, calls: int) -> dict[str, float]:
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        py = PEER_PY if backend == "theirs" else OURS_PY
        b = _spawn(
            py, ["backend_proc.py", backend, "--port", str(port), "--db", f"{tmp}/t.db"], for_peer=backend == "theirs"
        )
        try:
            _await_ready(b, backend)
            address = f"localhost:{port}"
            seq = _json_run(OURS_PY, ["transport.py", "wall", address, str(calls), "1"], for_peer=False)
            par = _json_run(OURS_PY, ["transport.py", "wall", address, str(calls), "64"], for_peer=False)
        finally:
            _close(b)
    return {"sequential": seq["calls_per_second"], "in_flight_64": par["calls_per_second"]}


def _cpu_floor_run(server: subprocess.Popen[str], args: list[str]) -> dict[str, Any]:
    """One measured loop of transport.py against the bare server; adds the server's CPU over that loop alone."""
    client = _spawn(OURS_PY, ["transport.py", *args], for_peer=False)
    assert client.stdin is not None and client.stdout is not None
    try:
        _await_ready(client, f"transport.py {args[0]}", word="warm")
        before = _cpu_seconds(server.pid)
        client.stdin.write("go\n")
        client.stdin.flush()
        result: dict[str, Any] = json.loads(client.stdout.readline())
        after = _cpu_seconds(server.pid)
    finally:
        _close(client)
    result["server_cpu"] = None if before is None or after is None else after - before
    return result


def cpu_floor(quick: bool) -> dict[str, dict[str, Any]] | None:
    """CPU per empty unary call and per empty streamed message, client + server, on the bare server."""
    calls, messages = (1000, 4000) if quick else (5000, 20000)
    port = _free_port()
    server = _spawn(OURS_PY, ["bare_server.py", str(port)], for_peer=False)
    try:
        _await_ready(server, "bare_server.py")
        address = f"127.0.0.1:{port}"
        runs = {
            "sequential": _cpu_floor_run(server, ["unary-cpu", address, str(calls), "1"]),
            "threads": _cpu_floor_run(server, ["unary-cpu", address, str(calls), "worker"]),
            "stream": _cpu_floor_run(server, ["stream-cpu", address, str(messages)]),
        }
    finally:
        _close(server)
    if any(r["server_cpu"] is None for r in runs.values()):
        return None
    for r in runs.values():
        r["cpu_each"] = (r["client_cpu"] + r["server_cpu"]) / r["count"]
    # The cheaper unary figure, so the ceiling below is the most generous one these measurements allow.
    unary = min(runs["sequential"]["cpu_each"], runs["threads"]["cpu_each"])
    per_orchestration = CHAIN3_UNARY * unary + CHAIN3_STREAMED * runs["stream"]["cpu_each"]
    runs["model"] = {
        "unary": unary,
        "streamed": runs["stream"]["cpu_each"],
        "per_orchestration": per_orchestration,
        "ceiling": CORES / per_orchestration,
    }
    return runs


def _fan_out_minimum(cpu: dict[str, Any], size: int) -> float:
    # One activity work item streamed and one CompleteActivityTask call each; orchestrator turns not counted.
    return size * (cpu["unary"] + cpu["streamed"]) / CORES


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def _fan_out_size(quick: bool) -> int:
    return 200 if quick else 1000


def _cpu_floor_lines(runs: dict[str, dict[str, Any]], quick: bool) -> list[str]:
    labels = {
        "sequential": "unary Hello, sequential",
        "threads": f"unary Hello, {runs['threads']['threads']} threads",
        "stream": "streamed empty WorkItem",
    }
    lines = []
    for key, label in labels.items():
        r = runs[key]
        unit = "message" if key == "stream" else "call"
        lines.append(
            f"  {label:26s} {r['count']:6d} {unit}s: client {r['client_cpu'] * 1000 / r['count']:.3f} + "
            f"server {r['server_cpu'] * 1000 / r['count']:.3f} = {r['cpu_each'] * 1000:.3f} ms CPU/{unit}"
            f"   ({r['count'] / r['seconds']:.0f}/s wall clock)"
        )
    m = runs["model"]
    size = _fan_out_size(quick)
    lines += [
        f"  3-activity chain: {CHAIN3_UNARY} unary x {m['unary'] * 1000:.3f} ms (the cheaper unary figure) + "
        f"{CHAIN3_STREAMED} streamed x {m['streamed'] * 1000:.3f} ms = {m['per_orchestration'] * 1000:.2f} ms "
        "transport CPU per orchestration",
        f"  CPU-bound ceiling: {CORES} cores / {m['per_orchestration'] * 1000:.2f} ms = {m['ceiling']:.0f} "
        "orchestrations/s for any Python client/backend/worker trio here, with no application work at all",
        f"  fan-out of {size}: at least {size} x ({m['unary'] * 1000:.3f} + {m['streamed'] * 1000:.3f}) ms / "
        f"{CORES} cores = {_fan_out_minimum(m, size):.3f} s of transport alone (orchestrator turns not counted)",
    ]
    return lines


def bench_transport(quick: bool, out: list[str]) -> dict[str, Any]:
    calls = 500 if quick else 3000
    floors: dict[str, Any] = {name: transport(name, calls) for name in ("ours-sqlite", "theirs")}
    out.append("## 1. Transport floor")
    out.append("  1a. Wall clock: empty unary Hello calls/s against each backend")
    for name in ("ours-sqlite", "theirs"):
        f = floors[name]
        out.append(f"  {name:12s} sequential {f['sequential']:8.0f}/s   64 in flight {f['in_flight_64']:8.0f}/s")
    floor = floors["ours-sqlite"]["in_flight_64"]
    out.append(
        f"  RPCs per 3-activity chain: {CHAIN3_RPCS} messages ({CHAIN3_UNARY} unary calls); wall-clock "
        f"ceiling ≈ {floor / CHAIN3_UNARY:.0f} orchestrations/s (ours' 64-in-flight floor / unary calls)"
    )
    out.append(
        "  1b. CPU cost: bench/bare_server.py (our stubs, no application work) and a client, separate "
        "processes; CPU from /proc over the measured loop only"
    )
    runs = cpu_floor(quick)
    if runs is None:
        out.append("  (no per-process CPU times on this platform: /proc is missing)")
    else:
        out.extend(_cpu_floor_lines(runs, quick))
        floors["cpu"] = runs["model"]
    return floors


def bench_throughput(quick: bool, out: list[str], floors: dict[str, Any] | None) -> None:
    count = 100 if quick else 500
    names = [n for n in ("ours", "ours-mem", "theirs", "mixed") if n in SELECTED]
    res = {name: scenario(name, "throughput", count) for name in names}
    out.append(f"## 2. Throughput: {count} orchestrations of a 3-activity chain, one worker process")
    for name, r in res.items():
        out.append(
            f"  {name:9s} {r['per_second']:8.1f} orchestrations/s  ({r['seconds']:.2f} s)" + _cpu_per_item(r, count)
        )
    rate = {name: r["per_second"] for name, r in res.items()}
    if {"ours", "theirs"} <= rate.keys():
        target = targets.at_least(targets.CHAIN3_THROUGHPUT)
        out.append(f"  ours / theirs: {_ratio(rate['ours'], rate['theirs'])} ({target})")
    if {"ours", "ours-mem"} <= rate.keys():
        out.append(f"  persistent / in-memory: {rate['ours'] / rate['ours-mem']:.0%} (target ≥ 70 %)")
    cpu = floors.get("cpu") if floors else None
    if cpu and "theirs" in rate:
        need = targets.CHAIN3_THROUGHPUT * rate["theirs"]
        out.append(
            f"  {targets.CHAIN3_THROUGHPUT:g}x theirs = {need:.0f}/s = {need / cpu['ceiling']:.0%} of the "
            "CPU-bound ceiling "
            f"(1b: transport alone caps any Python trio here at {cpu['ceiling']:.0f}/s = {CORES} cores / "
            f"{cpu['per_orchestration'] * 1000:.2f} ms)"
        )
        budget = CORES / need
        spent = [
            f"{n} {sum(res[n]['cpu']) * 1000 / count:.2f} ms"
            for n in ("ours", "theirs")
            if n in res and None not in res[n]["cpu"]
        ]
        out.append(
            f"  CPU budget per orchestration at {need:.0f}/s: {CORES} cores / {need:.0f}/s = {budget * 1000:.2f} ms; "
            f"the transport floor takes {cpu['per_orchestration'] * 1000:.2f} ms of it, leaving "
            f"{(budget - cpu['per_orchestration']) * 1000:.2f} ms for all application work"
            + (f" (backend + worker now spend: {', '.join(spent)}; client not counted)" if spent else "")
        )
    if cpu and "ours" in rate:
        out.append(f"  ours / CPU-bound ceiling (1b): {rate['ours'] / cpu['ceiling']:.0%}")
    if floors and "ours" in rate:
        ceiling = floors["ours-sqlite"]["in_flight_64"] / CHAIN3_UNARY
        out.append(f"  ours / wall-clock ceiling (1a): {rate['ours'] / ceiling:.0%} (target ≥ 70 %)")


def bench_latency(quick: bool, out: list[str]) -> None:
    count = 50 if quick else 200
    res = {name: scenario(name, "one_at_a_time", count) for name in ("ours", "theirs", "mixed") if name in SELECTED}
    out.append(f"## 2b. One at a time: {count} three-activity chains, each scheduled after the previous completed")
    for name, r in res.items():
        out.append(
            f"  {name:9s} {r['per_second']:8.1f} orchestrations/s  {r['seconds'] * 1000 / count:6.2f} ms per "
            "orchestration" + _cpu_per_item(r, count)
        )
    if {"ours", "theirs"} <= res.keys():
        out.append(
            f"  theirs / ours time per orchestration: {_ratio(res['theirs']['seconds'], res['ours']['seconds'])} "
            "(above 1: ours is faster)"
        )


def bench_fan_out(quick: bool, out: list[str], floors: dict[str, Any] | None) -> None:
    size = _fan_out_size(quick)
    res = {name: scenario(name, "fan_out", size) for name in ("ours", "theirs", "mixed") if name in SELECTED}
    out.append(f"## 3. Fan-out/fan-in of {size} activities in one orchestration")
    for name, r in res.items():
        out.append(f"  {name:9s} {r['seconds']:8.2f} s")
    if {"ours", "theirs"} <= res.keys():
        speedup = _ratio(res["theirs"]["seconds"], res["ours"]["seconds"])
        out.append(f"  theirs / ours: {speedup} faster ({targets.at_least(targets.FAN_OUT_SPEEDUP)})")
    cpu = floors.get("cpu") if floors else None
    if cpu and "theirs" in res:
        need, floor = res["theirs"]["seconds"] / targets.FAN_OUT_SPEEDUP, _fan_out_minimum(cpu, size)
        out.append(
            f"  {targets.FAN_OUT_SPEEDUP:g}x faster than theirs = {need:.3f} s; transport alone needs "
            f"≥ {floor:.3f} s for {size} activities here "
            f"({size} x {(cpu['unary'] + cpu['streamed']) * 1000:.3f} ms / {CORES} cores, 1b)"
        )


def bench_chain(quick: bool, out: list[str]) -> None:
    sizes = (100, 200) if quick else (500, 1000)
    out.append(f"## 4. Long chains of {sizes[0]} and {sizes[1]} sequential activities")
    for name in [n for n in ("ours", "theirs") if n in SELECTED]:
        t = [scenario(name, "chain", n)["seconds"] for n in sizes]
        out.append(
            f"  {name:9s} {t[0]:7.2f} s / {t[1]:7.2f} s   time({sizes[1]})/time({sizes[0]}) = "
            f"{t[1] / t[0]:.2f} (target ≤ 2.3; {sizes[1]} chain under 10 s)"
        )


def bench_replay(quick: bool, out: list[str]) -> None:
    script = HERE / "replay.py"
    if not script.exists():
        out.append("## 5. Replay cost per event: bench/replay.py missing")
        return
    args = [str(script)] + (["--quick"] if quick else [])
    proc = subprocess.run([OURS_PY, *args], cwd=ROOT, env=_env(False), capture_output=True, text=True, timeout=900)
    out.append("## 5. Replay cost per history event")
    out.extend("  " + line for line in (proc.stdout or proc.stderr).strip().splitlines())


def bench_admin(quick: bool, out: list[str]) -> None:
    """Ordinary-call latency while a full listing and a purge of a large task hub run (bench/admin_load.py)."""
    args = [str(HERE / "admin_load.py"), "--instances", "10000" if quick else "100000"]
    proc = subprocess.run([OURS_PY, *args], cwd=ROOT, env=_env(False), capture_output=True, text=True, timeout=1800)
    with LOG.open("a") as log:
        log.write(proc.stderr)
    out.append("## 6. Admin work beside ordinary calls (p99 of a start during a purge: target <= 100 ms)")
    out.extend("  " + line for line in (proc.stdout or proc.stderr).strip().splitlines())


def _section(title: str, script: str, args: list[str], out: list[str]) -> None:
    proc = subprocess.run([OURS_PY, str(HERE / script), *args], cwd=ROOT, env=_env(False), capture_output=True,
                          text=True, timeout=3600)  # fmt: skip
    with LOG.open("a") as log:
        log.write(proc.stderr)
    out.append(title)
    out.extend("  " + line for line in (proc.stdout or proc.stderr).strip().splitlines())


def bench_worker(quick: bool, out: list[str]) -> None:
    title = (
        "## 7. The worker alone: work items per worker CPU-second, on a feed that does no work "
        f"({targets.at_least(targets.WORKER_CPU)})"
    )
    _section(title, "worker_cpu.py", ["--quick"] if quick else [], out)


def bench_worker_e2e(quick: bool, out: list[str]) -> None:
    title = ("## 7b. The worker end to end: 3-activity chains on our emulator, worker CPU per orchestration, "
             f"throughput and latency (bench/worker_e2e.py, {targets.at_least(targets.WORKER_CPU)} less CPU "
             "than Microsoft's)")  # fmt: skip
    _section(title, "worker_e2e.py", ["--count", "100", "--rounds", "1"] if quick else [], out)


def bench_grpc_polling(quick: bool, out: list[str]) -> None:
    title = ("## 7c. The SDK's gRPC client polling: client CPU per unary call against grpc's default "
             "(bench/grpc_polling.py)")  # fmt: skip
    _section(title, "grpc_polling.py", ["--rounds", "1", "--calls", "1000"] if quick else [], out)


def bench_store(quick: bool, out: list[str], instances: int | None) -> None:
    count = instances or (20_000 if quick else 100_000)
    title = f"## 8. The emulator over a store of {count:,} finished orchestrations (bench/store_scale.py)"
    _section(title, "store_scale.py", ["--instances", str(count), "--rounds", "1" if quick else "3"], out)


def bench_history_export(quick: bool, out: list[str]) -> None:
    count = 1_000 if quick else 10_000
    title = (f"## 9. History export of {count:,} finished instances: time and peak RSS of the exporting process "
             "(bench/history_export.py)")  # fmt: skip
    _section(title, "history_export.py", ["--instances", str(count)], out)


def bench_hardening(quick: bool, out: list[str]) -> None:
    """What the emulator's defences cost: durable commits, the integrity check, byte-bounded pages, wake-ups."""
    sections = [
        ("## 11a. Durable commits: starts per second and latency, --durability full (the default) beside normal "
         f"(bench/durability.py; full / normal: {targets.at_least(targets.FULL_OVER_NORMAL_8)} with 8 clients, "
         f"{targets.at_least(targets.FULL_OVER_NORMAL_1)} with 1; p99 of a start under full at most "
         f"{targets.FULL_P99_OVER_NORMAL:g}x normal's)",
         "durability.py", ["--starts", "300", "--rounds", "1"] if quick else []),
        ("## 11b. The integrity check at start against the store's size (bench/integrity_check.py)",
         "integrity_check.py", ["--sizes", "10000,100000"] if quick else []),
        ("## 11c. Listing pages bounded by bytes beside pages bounded by count only (bench/page_bytes.py)",
         "page_bytes.py", ["--instances", "5000", "--rounds", "2"] if quick else []),
        ("## 11d. StartInstance with idle work-item streams open: only the streams that can take the work wake "
         "(bench/stream_wakeups.py)", "stream_wakeups.py",
         ["--streams", "0,100,500", "--starts", "100"] if quick else []),
    ]  # fmt: skip
    for title, script, args in sections:
        _section(title, script, args, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument(
        "--only",
        default="transport,throughput,latency,fan_out,chain,replay,admin,worker,worker_e2e,grpc_polling,store,"
        "history_export,langgraph,hardening",
    )
    parser.add_argument("--store-instances", type=int, help="size of section 8's store (default 100,000)")
    parser.add_argument("--pairs", default=",".join(PAIRS), help="which SDK/backend pairs to run (default: all)")
    parser.add_argument("--backend", default=os.environ.get("DTS_TEST_BACKEND"),
                        help="measure both SDKs against this DTS endpoint (env DTS_TEST_BACKEND)")
    parser.add_argument("--taskhub", default=os.environ.get("DTS_TEST_TASKHUB", "default"),
                        help="task hub on --backend (env DTS_TEST_TASKHUB, default 'default')")
    args = parser.parse_args()
    if not Path(PEER_PY).exists():
        print(f"the official SDK peer is missing at {PEER_PY}; run via: python3 dev.py bench", file=sys.stderr)
        return 2
    only = set(args.only.split(","))
    SELECTED.update(args.pairs.split(","))
    where = ""
    if args.backend:
        address = args.backend if "://" in args.backend else f"http://{args.backend}"
        EXTERNAL.update(address=address, taskhub=args.taskhub)
        # Both SDKs on the one endpoint: the pairs that start a backend of their own do not apply.
        SELECTED.intersection_update({"ours", "theirs"})
        # These sections start servers of their own.
        only -= {"transport", "replay", "admin", "worker", "worker_e2e", "grpc_polling", "store", "history_export",
                 "langgraph", "hardening"}
        where = f", against {address} (task hub {args.taskhub!r}): ours = our SDK, theirs = Microsoft's SDK"
    out = [
        f"# Benchmarks — {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}" + (" (quick)" if args.quick else "") + where
    ]
    LOG.write_text("")
    floors = bench_transport(args.quick, out) if "transport" in only else None
    steps = [
        ("throughput", lambda: bench_throughput(args.quick, out, floors)),
        ("latency", lambda: bench_latency(args.quick, out)),
        ("fan_out", lambda: bench_fan_out(args.quick, out, floors)),
        ("chain", lambda: bench_chain(args.quick, out)),
        ("replay", lambda: bench_replay(args.quick, out)),
        ("admin", lambda: bench_admin(args.quick, out)),
        ("worker", lambda: bench_worker(args.quick, out)),
        ("worker_e2e", lambda: bench_worker_e2e(args.quick, out)),
        ("grpc_polling", lambda: bench_grpc_polling(args.quick, out)),
        ("store", lambda: bench_store(args.quick, out, args.store_instances)),
        ("history_export", lambda: bench_history_export(args.quick, out)),
        ("langgraph", lambda: _section("## 10. LangGraph nodes run durably beside plain LangGraph "
                                       "(bench/langgraph_cost.py)", "langgraph_cost.py",
                                       ["--rounds", "1"] if args.quick else [], out)),
        ("hardening", lambda: bench_hardening(args.quick, out)),
    ]
    print("\n".join(out), flush=True)
    shown = len(out)
    for key, run in steps:
        if key in only:
            print(f"running {key} … (process logs: {LOG})", file=sys.stderr, flush=True)
            run()
            # Each section as soon as it is measured: a full run takes minutes.
            print("\n".join(out[shown:]), flush=True)
            shown = len(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
