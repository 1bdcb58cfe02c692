"""What a LangGraph node costs run durably, beside the same graph run by plain LangGraph in one process.

Two graphs: a chain of 50 nodes, and a fan-out of 100 ``Send`` tasks reduced by one node. Each chain node reads
one small channel (its ``input_schema``) and appends 256 bytes to a list that grows along the chain, so the
thread's state grows with the step while what each node reads and writes stays the same size.

Per round and graph, plain LangGraph runs the graph in this process (with an ``InMemorySaver``, as a LangGraph
application checkpoints, and without one); then our emulator (SQLite) runs in one process, a worker serving the
graphs (``register_graph``) in a second, and this process invokes the graph through ``DurableGraph``. Reported
per executed Pregel task (a node call, a ``Send`` or LangGraph's input task: one activity each): CPU ms of the
worker, of the emulator and of the client (``/proc`` for the two processes, ``time.process_time`` here), wall ms,
and the bytes of history; the median over the rounds. The history line compares each graph's first ten tasks'
bytes with its last ten's: flat when a task's history holds what the node reads and writes, growing along the
chain when it holds the whole state at every step.

Targets: at most 2 ms of worker CPU per node beyond plain LangGraph's; history per node flat along the chain.
Prints, never asserts. Usage: .venv/bin/python bench/langgraph_cost.py [--rounds 3] [--repeat 5] [--chain 50]
[--fan-out 100]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import operator
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Send  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

WRITE = "x" * 256


class Chain(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


class Count(TypedDict):
    n: int


class Fan(TypedDict):
    size: int
    results: Annotated[list[int], operator.add]
    total: int


def build_chain(length: int) -> Any:
    def step(s: Count) -> dict[str, Any]:
        return {"n": s["n"] + 1, "log": [WRITE]}

    b = StateGraph(Chain)
    names = [f"n{i:03d}" for i in range(length)]
    for name in names:
        b.add_node(name, step, input_schema=Count)
    b.add_edge(START, names[0])
    for first, then in itertools.pairwise(names):
        b.add_edge(first, then)
    b.add_edge(names[-1], END)
    return b.compile()


def build_fan(size: int) -> Any:
    def scatter(s: Fan) -> list[Send]:
        return [Send("work", {"i": i}) for i in range(s["size"])]

    def work(item: dict[str, int]) -> dict[str, Any]:
        return {"results": [item["i"] * 2]}

    def reduce(s: Fan) -> dict[str, Any]:
        return {"total": sum(s["results"])}

    b = StateGraph(Fan)
    b.add_node("work", work)
    b.add_node("reduce", reduce)
    b.add_conditional_edges(START, scatter, ["work"])
    b.add_edge("work", "reduce")
    b.add_edge("reduce", END)
    return b.compile()


def workloads(chain: int, fan_out: int) -> dict[str, tuple[Any, dict[str, Any], int]]:
    """name -> (graph, input, Pregel tasks one run executes: the nodes and LangGraph's input task)."""
    return {
        f"chain-{chain}": (build_chain(chain), {"n": 0, "log": []}, chain + 1),
        f"send-{fan_out}": (build_fan(fan_out), {"size": fan_out, "results": [], "total": 0}, fan_out + 2),
    }


def serve(address: str, chain: int, fan_out: int) -> None:
    """The worker process: serves both graphs until stdin closes.

    A thread ends its execution after each run (it continues as new, and the run's history goes with it); here
    the runs stay in their executions, so that the history each task wrote can be read afterwards. What that
    leaves out is one orchestration turn per request, not per node.
    """
    from durabletask import worker
    from durabletask.extensions.langgraph import _orchestrator, register_graph

    _orchestrator.ThreadRuntime.seal = lambda self: False  # type: ignore[method-assign]

    w = worker.TaskHubGrpcWorker(host_address=address)
    for name, (graph, _, _) in workloads(chain, fan_out).items():
        register_graph(w, name, graph)
    w.start()
    print("ready", flush=True)
    sys.stdin.read()
    w.stop()


def plain(graph: Any, inp: dict[str, Any], nodes: int, checkpointer: Any, repeat: int) -> dict[str, float]:
    app = graph.copy(update={"checkpointer": checkpointer}) if checkpointer is not None else graph
    app.invoke(inp, {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex}"}})
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        app.invoke(inp, {"configurable": {"thread_id": uuid.uuid4().hex}})
    count = nodes * repeat
    return {"worker": (time.process_time() - cpu) * 1000 / count, "wall": (time.perf_counter() - wall) * 1000 / count}


def history_sizes(address: str, instance: str) -> tuple[int, list[int]]:
    """The instance's history in bytes, and the bytes of each activity (its scheduling and its result)."""
    import grpc

    from durabletask._proto import orchestrator_service_pb2 as pb
    from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        chunks = stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=instance), timeout=60)
        events = [e for chunk in chunks for e in chunk.events]
    per_task: dict[int, int] = {}
    for e in events:
        if e.HasField("taskScheduled"):
            per_task[e.eventId] = per_task.get(e.eventId, 0) + e.ByteSize()
        elif e.HasField("taskCompleted"):
            key = e.taskCompleted.taskScheduledId
            per_task[key] = per_task.get(key, 0) + e.ByteSize()
    return sum(e.ByteSize() for e in events), [per_task[k] for k in sorted(per_task)]


def durable(
    address: str, procs: list[Any], name: str, graph: Any, inp: dict[str, Any], nodes: int, repeat: int
) -> dict[str, Any]:
    """``repeat`` runs, one after the other, each on a new thread; figures per executed node."""
    from durabletask import client
    from durabletask.extensions.langgraph import DurableGraph, instance_id

    quiet = logging.getLogger("bench-langgraph-client")
    quiet.setLevel(logging.WARNING)  # the client logs a line per status read at INFO
    c = client.TaskHubGrpcClient(host_address=address, logger=quiet)
    threads = [uuid.uuid4().hex for _ in range(repeat)]
    try:
        app = DurableGraph(c, name, graph)
        app.invoke(inp, {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex}"}})  # connections, imports
        before = [run_all._cpu_seconds(p.pid) or 0.0 for p in procs]
        cpu, wall = time.process_time(), time.perf_counter()
        for thread in threads:
            app.invoke(inp, {"configurable": {"thread_id": thread}})
        client_cpu, elapsed = time.process_time() - cpu, time.perf_counter() - wall
        after = [run_all._cpu_seconds(p.pid) or 0.0 for p in procs]
    finally:
        c.close()
    sizes = [history_sizes(address, instance_id(name, thread)) for thread in threads]
    per_task = [t for _, tasks in sizes for t in tasks]
    if len(per_task) != nodes * repeat:
        raise RuntimeError(f"{name}: {len(per_task)} activities ran, {nodes * repeat} nodes expected")
    emulator_cpu, worker_cpu = (a - b for a, b in zip(after, before, strict=True))
    count = nodes * repeat
    return {
        "worker": worker_cpu * 1000 / count,
        "emulator": emulator_cpu * 1000 / count,
        "client": client_cpu * 1000 / count,
        "wall": elapsed * 1000 / count,
        "history": sum(total for total, _ in sizes) / count,
        "early": statistics.mean(t for _, tasks in sizes for t in tasks[:10]),
        "late": statistics.mean(t for _, tasks in sizes for t in tasks[-10:]),
    }


def one_round(chain: int, fan_out: int, repeat: int) -> dict[str, dict[str, dict[str, Any]]]:
    port = run_all._free_port()
    folder = tempfile.TemporaryDirectory()
    found: dict[str, dict[str, dict[str, Any]]] = {}
    emulator = run_all._spawn(run_all.OURS_PY, ["backend_proc.py", "ours-sqlite", "--port", str(port), "--db",
                                                str(Path(folder.name) / "bench.db")], for_peer=False)  # fmt: skip
    worker = None
    try:
        run_all._await_ready(emulator, "the emulator")
        address = f"localhost:{port}"
        args = [str(Path(__file__).resolve()), "--worker", address, "--chain", str(chain), "--fan-out", str(fan_out)]
        worker = run_all._spawn(run_all.OURS_PY, args, for_peer=False)
        run_all._await_ready(worker, "the worker")
        for name, (graph, inp, nodes) in workloads(chain, fan_out).items():
            found[name] = {
                "plain": plain(graph, inp, nodes, None, repeat),
                "plain+saver": plain(graph, inp, nodes, InMemorySaver(), repeat),
                "durable": durable(address, [emulator, worker], name, graph, inp, nodes, repeat),
            }
    finally:
        if worker is not None:
            run_all._close(worker)
        run_all._close(emulator)
        folder.cleanup()
    return found


def _median(rounds: list[dict[str, Any]], name: str, side: str, key: str) -> float:
    return statistics.median(r[name][side][key] for r in rounds)


def report(rounds: list[dict[str, Any]]) -> list[str]:
    out = [f"{'graph':<10} {'side':<32} {'worker':>8} {'emulator':>9} {'client':>8} {'wall':>8} {'history':>9}",
           f"{'':<10} {'':<32} {'CPU ms/node':>17} {'':>8} {'ms/node':>8} {'B/node':>9}"]  # fmt: skip
    for name in rounds[0]:
        m = {side: {k: _median(rounds, name, side, k) for k in rounds[0][name][side]}
             for side in ("plain", "plain+saver", "durable")}  # fmt: skip
        for side, label in (("plain", "plain LangGraph"), ("plain+saver", "plain LangGraph + InMemorySaver")):
            out.append(f"{name:<10} {label:<32} {m[side]['worker']:>8.3f} {'-':>9} {'-':>8} {m[side]['wall']:>8.3f} "
                       f"{'-':>9}")  # fmt: skip
        d = m["durable"]
        out.append(f"{name:<10} {'durable (DurableGraph)':<32} {d['worker']:>8.3f} {d['emulator']:>9.3f} "
                   f"{d['client']:>8.3f} {d['wall']:>8.3f} {d['history']:>9.0f}")  # fmt: skip
        base = m["plain+saver"]
        excess = d["worker"] - base["worker"]
        verdict = "met" if excess <= 2.0 else "NOT met"
        ratios = f"worker/plain+saver {d['worker'] / base['worker']:.1f}x, wall {d['wall'] / base['wall']:.1f}x"
        out.append(f"{'':<10} worker CPU beyond plain+saver: {excess:+.3f} ms/node (<= 2 ms: {verdict}); {ratios}")
        growth = d["late"] / d["early"]
        flat = "flat" if growth < 1.5 else "grows with the step"
        out.append(f"{'':<10} history per node, first 10 nodes {d['early']:.0f} B, last 10 {d['late']:.0f} B: "
                   f"x{growth:.1f} ({flat}; target: flat)")  # fmt: skip
    out.append(f"(median of {len(rounds)} round(s); CPU from /proc for the emulator and worker processes)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chain", type=int, default=50)
    parser.add_argument("--fan-out", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each graph per round (CPU ticks are 10 ms)")
    parser.add_argument("--worker", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.chain, args.fan_out)
        return 0
    rounds = [one_round(args.chain, args.fan_out, args.repeat) for _ in range(args.rounds)]
    print("\n".join(report(rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
