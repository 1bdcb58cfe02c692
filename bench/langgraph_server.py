"""LangGraph's server API on DTS beside ``DurableGraph`` in-process: runs per second and time to the first event.

    .venv/bin/python bench/langgraph_server.py [--rounds 20] [--runs 40] [--concurrency 8]

One graph, two nodes: ``first`` writes one custom chunk and returns, ``second`` returns. Side by side, on the same
kind of store (a SQLite file) and the same process layout (the emulator embedded in the process that runs the
worker, as ``dev`` embeds it):

- ``server``: ``durabletask langgraph dev`` (its embedded emulator, its worker and its HTTP API in one process),
  driven by ``langgraph_sdk`` from this one as its users drive it: ``runs.stream(..., stream_mode="custom")`` for
  the first event, ``threads.create`` and ``runs.wait`` for runs/s.
- ``in-process``: an embedded emulator, a worker serving the graph and a ``DurableGraph``, all in this process:
  ``stream(..., stream_mode="custom")`` and ``invoke``.

Time to first event: from the call to the first custom chunk, sequentially, one new thread per round, median and
p90 over ``--rounds``. Runs/s: ``--runs`` runs on as many new threads, ``--concurrency`` at a time, twice (the
better of the two). Prints the load average beside the figures, and the ratios; never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.langgraph_server.support_server import dev_server, free_port  # noqa: E402

GRAPH = """
from typing import TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    n: int
    done: bool


def first(state: State) -> State:
    get_stream_writer()({"step": "first"})
    return {"n": state.get("n", 0) + 1}


def second(state: State) -> State:
    return {"done": True}


builder = StateGraph(State)
builder.add_node("first", first)
builder.add_node("second", second)
builder.add_edge(START, "first")
builder.add_edge("first", "second")
builder.add_edge("second", END)
graph = builder.compile()
"""


def _project(folder: Path) -> Path:
    (folder / "bench_graph.py").write_text(GRAPH)
    config = folder / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"bench": "./bench_graph.py:graph"}}))
    return config


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def _throughput(one: Callable[[], None], runs: int, concurrency: int) -> float:
    best = 0.0
    for _ in range(2):
        start = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(lambda _: one(), range(runs)))
        best = max(best, runs / (time.monotonic() - start))
    return best


def bench_server(folder: Path, rounds: int, runs: int, concurrency: int) -> dict[str, Any]:
    from langgraph_sdk import get_client, get_sync_client

    config = _project(folder)
    port = free_port()
    with dev_server(config, port, folder / "server.log", "--data-dir", str(folder / "data")):
        url = f"http://127.0.0.1:{port}"
        client = get_sync_client(url=url)

        def first_event() -> float:
            thread = client.threads.create()
            start = time.monotonic()
            for part in client.runs.stream(thread["thread_id"], "bench", input={"n": 0}, stream_mode="custom"):
                if part.event == "custom":
                    elapsed = time.monotonic() - start
            return elapsed

        first_event()  # warm up
        firsts = [first_event() for _ in range(rounds)]

        async def many() -> None:
            aclient = get_client(url=url)
            gate = asyncio.Semaphore(concurrency)

            async def one() -> None:
                async with gate:
                    thread = await aclient.threads.create()
                    out = await aclient.runs.wait(thread["thread_id"], "bench", input={"n": 0})
                    assert isinstance(out, dict) and out.get("done") is True, out

            await asyncio.gather(*(one() for _ in range(runs)))

        best = 0.0
        for _ in range(2):
            start = time.monotonic()
            asyncio.run(many())
            best = max(best, runs / (time.monotonic() - start))
    return {"first": _stats(firsts), "runs_per_s": best}


def bench_in_process(folder: Path, rounds: int, runs: int, concurrency: int) -> dict[str, Any]:
    from dtscale_emulator.server import EmulatorServer
    from durabletask import client, worker
    from durabletask.extensions.langgraph import DurableGraph, register_graph

    sys.path.insert(0, str(folder))
    _project(folder)
    import bench_graph  # the same graph, from the same file

    emulator = EmulatorServer(port=0, db_path=str(folder / "hub.db"))
    emulator.start()
    address = f"127.0.0.1:{emulator.port}"
    w = worker.TaskHubGrpcWorker(host_address=address)
    register_graph(w, "bench", bench_graph.graph)
    try:
        w.start()
        c = client.TaskHubGrpcClient(host_address=address)
        app = DurableGraph(c, "bench", bench_graph.graph)

        def first_event() -> float:
            cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
            start = time.monotonic()
            for _chunk in app.stream({"n": 0}, cfg, stream_mode="custom"):
                elapsed = time.monotonic() - start
            return elapsed

        def one() -> None:
            out = app.invoke({"n": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}})
            assert out.get("done") is True, out

        first_event()
        firsts = [first_event() for _ in range(rounds)]
        best = _throughput(one, runs, concurrency)
        c.close()
    finally:
        w.stop()
        emulator.stop()
    return {"first": _stats(firsts), "runs_per_s": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the in-process client's and worker's per-call lines
    load_before = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="lg-server-bench-") as scratch:
        (Path(scratch) / "server").mkdir()
        (Path(scratch) / "in-process").mkdir()
        server = bench_server(Path(scratch) / "server", args.rounds, args.runs, args.concurrency)
        local = bench_in_process(Path(scratch) / "in-process", args.rounds, args.runs, args.concurrency)
    load_after = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"uptime before: {load_before}\nuptime after:  {load_after}")
    print(f"{args.rounds} rounds for the first event; {args.runs} runs, {args.concurrency} at a time, for runs/s")
    print("| | first custom event: median | p90 | runs/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, found in (("`durabletask langgraph dev` + langgraph_sdk", server), ("DurableGraph in-process", local)):
        median, p90 = found["first"]
        print(f"| {name} | {median * 1000:.0f} ms | {p90 * 1000:.0f} ms | {found['runs_per_s']:.1f} |")
    ratio_first = server["first"][0] / local["first"][0]
    ratio_runs = server["runs_per_s"] / local["runs_per_s"]
    print(f"server / in-process: first event x{ratio_first:.2f}, runs/s x{ratio_runs:.2f}")


if __name__ == "__main__":
    main()
