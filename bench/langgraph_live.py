"""When a LangGraph node's chunks reach the client: on the durable stream, beside the custom status of before.

    .venv/bin/python bench/langgraph_live.py [--rounds 10] [--hold 1.0] [--tokens 10]

One node writes ``--tokens`` custom chunks, ``--hold`` / ``--tokens`` seconds apart, then returns. Each round
streams it (``stream_mode="custom"``) on a new thread of each kind, side by side:

- ``stream``: a short thread ID; the chunks travel on the instance's durable stream as the node writes them.
- ``status``: a request that does not ask for the stream, as clients from before durable streams sent them, so the
  thread answers in its custom status: the chunks come once the node's superstep has finished.

Reported per kind: the median over the rounds of the time from the ``stream`` call to the first chunk, to the last
chunk, and the first chunk's time as a share of the node's hold (near 0: live; near or above 1: at the end). The
emulator (embedded), the worker and the client share this process. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from dtscale_emulator.server import EmulatorServer
from durabletask import client, worker
from durabletask.extensions.langgraph import DurableGraph, _requests, register_graph

NAME = "live"


class State(TypedDict):
    n: int


def build(tokens: int, hold: float) -> Any:
    def talk(s: State) -> dict[str, Any]:
        write = get_stream_writer()
        for i in range(tokens):
            write(i)
            time.sleep(hold / tokens)
        return {"n": s["n"] + 1}

    b = StateGraph(State)
    b.add_node("talk", talk)
    b.add_edge(START, "talk")
    b.add_edge("talk", END)
    return b.compile()


def one(app: DurableGraph, kind: str, tokens: int) -> tuple[float, float]:
    _requests.ASK_FOR_STREAM = kind == "stream"
    start = time.monotonic()
    first = 0.0
    seen = []
    for chunk in app.stream({"n": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}}, stream_mode="custom"):
        if not seen:
            first = time.monotonic() - start
        seen.append(chunk)
    assert seen == list(range(tokens)), seen
    return first, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--hold", type=float, default=1.0)
    parser.add_argument("--tokens", type=int, default=10)
    args = parser.parse_args()
    server = EmulatorServer(port=0, in_memory=True)
    server.start()
    address = f"localhost:{server.port}"
    w = worker.TaskHubGrpcWorker(host_address=address)
    register_graph(w, NAME, build(args.tokens, args.hold))
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        app = DurableGraph(c, NAME, build(args.tokens, args.hold))
        one(app, "stream", args.tokens)  # warm up
        times: dict[str, list[tuple[float, float]]] = {"stream": [], "status": []}
        for _ in range(args.rounds):
            for kind in times:
                times[kind].append(one(app, kind, args.tokens))
    finally:
        c.close()
        w.stop()
        server.stop()
    print(f"load average at the end: {os.getloadavg()}")
    print(f"{args.rounds} rounds, {args.tokens} chunks over {args.hold:g} s")
    print("| kind | first chunk (median) | last chunk (median) | first chunk / hold |")
    print("| --- | --- | --- | --- |")
    for kind, found in times.items():
        first = statistics.median(f for f, _ in found)
        last = statistics.median(t for _, t in found)
        print(f"| {kind} | {first * 1000:.0f} ms | {last * 1000:.0f} ms | {first / args.hold:.2f} |")


if __name__ == "__main__":
    main()
