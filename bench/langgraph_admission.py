"""How long ``runs.create`` takes on an idle thread, this tree beside an earlier revision, side by side.

    .venv/bin/python bench/langgraph_admission.py --against REV [--rounds 30]

Two ``durabletask langgraph dev`` processes run at once, one importing ``durabletask`` from this tree, the other
from ``REV`` (its ``durabletask/`` folder, taken with ``git archive``); each serves the same two-node graph on a
SQLite file store. Rounds alternate between them: a new thread, then ``runs.create`` with
``multitask_strategy="reject"``, its join, and ``runs.create`` with ``enqueue`` on the now idle thread, and its join.
Only the ``runs.create`` calls are timed (the path that admission changes: no race, nothing in flight). Prints
median and p90 per side, their ratio, and the load average before and after; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.langgraph_server.support_server import ServerProcess, cli, free_port  # noqa: E402

GRAPH = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    n: int
    done: bool


def first(state: State) -> State:
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


def _tree_of(revision: str, into: Path) -> Path:
    """The ``durabletask`` package of ``revision``, unpacked under ``into``."""
    into.mkdir(parents=True)
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision, "durabletask"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


@contextmanager
def _dev(folder: Path, source: Path) -> Iterator[str]:
    """``durabletask langgraph dev`` importing ``durabletask`` from ``source``; yields its URL."""
    folder.mkdir(parents=True)
    (folder / "bench_graph.py").write_text(GRAPH)
    config = folder / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"bench": "./bench_graph.py:graph"}}))
    port = free_port()
    command = cli("langgraph", "dev", "--config", str(config), "--host", "127.0.0.1", "--port", str(port))
    env = {"PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
    process = ServerProcess(
        [*command, "--data-dir", str(folder / "data")],
        f"http://127.0.0.1:{port}",
        folder / "server.log",
        cwd=folder,
        env=env,
    )
    process.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()


def _round(client: object) -> list[float]:
    """One round on a new thread: the seconds each ``runs.create`` took."""
    from langgraph_sdk.client import SyncLangGraphClient

    assert isinstance(client, SyncLangGraphClient)
    thread_id = client.threads.create()["thread_id"]
    took = []
    for strategy in ("reject", "enqueue"):
        start = time.perf_counter()
        run = client.runs.create(thread_id, "bench", input={"n": 0}, multitask_strategy=strategy)  # type: ignore[arg-type]
        took.append(time.perf_counter() - start)
        client.runs.join(thread_id, run["run_id"])
    return took


def _stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms (n={len(ordered)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", required=True, help="the earlier revision (a commit, a tag)")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    from langgraph_sdk import get_sync_client

    load_before = os.getloadavg()
    samples: dict[str, list[float]] = {"this tree": [], args.against: []}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        old = _tree_of(args.against, Path(tmp) / "old")
        urls = {
            "this tree": stack.enter_context(_dev(Path(tmp) / "new-project", ROOT)),
            args.against: stack.enter_context(_dev(Path(tmp) / "old-project", old)),
        }
        clients = {side: stack.enter_context(get_sync_client(url=url)) for side, url in urls.items()}
        for client in clients.values():
            _round(client)  # warm up
        for _ in range(args.rounds):
            for side, client in clients.items():
                samples[side] += _round(client)
    load_after = os.getloadavg()
    for side, found in samples.items():
        print(f"{side:>12}: runs.create {_stats(found)}")
    ratio = statistics.median(samples["this tree"]) / statistics.median(samples[args.against])
    print(f"median ratio this tree / {args.against}: x{ratio:.2f}")
    print(f"load average (1 min) {load_before[0]:.2f} -> {load_after[0]:.2f}")


if __name__ == "__main__":
    main()
