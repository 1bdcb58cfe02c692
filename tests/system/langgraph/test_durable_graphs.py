"""LangGraph graphs on real worker processes: crashes, interrupts resumed elsewhere days later, fan-out, pinning.

Each node records its runs (and the PID that ran it) in the shared ledger; plain LangGraph, run in this process
on a ledger of its own, gives the reference result.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from durabletask.extensions.langgraph import instance_id
from tests.support.langgraph_trace import norm
from tests.support.reliability import Ledger, wait_until
from tests.system.langgraph.graphs import CHAIN, FAN_OUT, build_all, pids, release_file

from .conftest import ClockedCluster, GraphCluster

pytestmark = pytest.mark.local_only("the worker processes connect to the emulator the test starts")
WAIT = 120


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def plain_result(folder: Path, graph: str, run: str, inp: dict[str, Any]) -> Any:
    """Plain LangGraph's result for ``inp``, on a ledger of its own (nothing it records counts for the test)."""
    ledger = Ledger(folder / "plain-ledger.db")
    release_file(ledger, run).touch()
    return norm(build_all(ledger, durable=False)[graph].invoke(inp))


def history_kinds(cluster: GraphCluster, iid: str) -> list[str]:
    """The instance's event kinds; none before the client has started it."""
    try:
        return cluster.history_kinds(iid)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return []
        raise


def in_background(pool: ThreadPoolExecutor, call: Callable[..., Any], *args: Any) -> Future[Any]:
    return pool.submit(call, *args)


def test_a_worker_killed_while_node_3_blocks_is_replaced_and_completed_nodes_never_run_again(
    cluster: GraphCluster, tmp_path: Path
) -> None:
    run = "chain-kill"
    inp = {"run": run, "trail": []}
    first = cluster.start_graph_worker()
    app = cluster.app("chain")
    with ThreadPoolExecutor(1) as pool:
        pending = in_background(pool, app.invoke, inp, config(run))
        # Node 3 records its key after its start: waiting for the key leaves the kill no moment in between.
        wait_until(lambda: bool(pids(cluster.ledger, f"{run}/n3/key/")), WAIT, "node 3 to record its key")
        cluster.kill_worker(first)
        second = cluster.start_graph_worker()
        release_file(cluster.ledger, run).touch()
        out = pending.result(timeout=WAIT)

    ran = pids(cluster.ledger, f"{run}/")
    assert [ran[f"{run}/{n}"] for n in CHAIN] == [{first.pid}] * 2 + [{first.pid, second.pid}] + [{second.pid}] * 2
    attempts = cluster.ledger.attempts()
    assert [attempts[f"{run}/{n}"] for n in ("n1", "n2", "n4", "n5")] == [1, 1, 1, 1], attempts
    assert 1 <= attempts[f"{run}/n3"] <= 2, attempts
    # Both runs of node 3 had the one idempotency key of its task.
    [(key, runs)] = pids(cluster.ledger, f"{run}/n3/key/").items()
    assert runs == {first.pid, second.pid} and attempts[key] == 2, key
    reference = plain_result(tmp_path, "chain", run, inp)
    assert norm(out) == reference == {"run": run, "trail": list(CHAIN)}
    assert norm(app.get_state(config(run)).values) == reference


def test_an_interrupt_is_resumed_from_another_process_three_days_later_after_every_worker_restarted(
    clocked_cluster: ClockedCluster, tmp_path: Path
) -> None:
    c = clocked_cluster
    run = "approval-later"
    worker = c.start_graph_worker()
    app = c.app("approval")
    out = app.invoke({"run": run, "trail": []}, config(run))
    [waiting] = out["__interrupt__"]
    assert waiting.value == {"question": f"apply {run}?"}
    c.kill_worker(worker)
    iid = instance_id("approval", run)
    # The manual clock stands still while the thread waits. Read from it rather than from the history: the run
    # ends its execution, and the next execution may have no events yet when the worker is killed.
    waited_at = c.clock.now().replace(tzinfo=None)
    c.clock.advance(timedelta(days=3))
    c.start_graph_worker()
    # Its interrupt is the same one after the restart, and no node ran while the thread waited.
    assert [i.id for i in app.get_state(config(run)).interrupts] == [waiting.id]
    assert c.ledger.attempts() == {f"{run}/prepare": 1, f"{run}/approve": 1}
    resumed = c.client_process("approval", run, "alice")

    assert resumed == {"run": run, "trail": ["prepared", "approved by alice", "applied"]}
    assert resumed == plain_after_resume(tmp_path, run)
    attempts = c.ledger.attempts()
    # LangGraph runs the interrupted node again on resume; everything else ran once.
    assert (attempts[f"{run}/prepare"], attempts[f"{run}/approve"], attempts[f"{run}/apply"]) == (1, 2, 1)
    # The resumed run ended its execution; the thread's next one began three days after it had waited.
    events = c.history(iid)
    started = next(e for e in events if e.HasField("executionStarted"))
    assert started.timestamp.ToDatetime() - waited_at >= timedelta(days=3)


def plain_after_resume(folder: Path, run: str) -> Any:
    graph = build_all(Ledger(folder / "plain-ledger.db"), durable=False)["approval"]
    plain = graph.copy(update={"checkpointer": InMemorySaver()})
    plain.invoke({"run": run, "trail": []}, config(run))
    return norm(plain.invoke(Command(resume="alice"), config(run)))


def test_a_40_way_send_fan_out_runs_on_both_worker_processes(cluster: GraphCluster, tmp_path: Path) -> None:
    run = "fan-out"
    inp = {"run": run, "xs": list(range(FAN_OUT)), "squares": [], "total": 0}
    workers = [cluster.start_graph_worker(), cluster.start_graph_worker()]
    out = cluster.app("fan_out").invoke(inp, config(run))

    ran = pids(cluster.ledger, f"{run}/square/")
    assert len(ran) == FAN_OUT
    assert set().union(*ran.values()) == {w.pid for w in workers}
    assert cluster.ledger.attempts()[f"{run}/total"] == 1
    reference = plain_result(tmp_path, "fan_out", run, inp)
    assert norm(out)["total"] == reference["total"] == sum(x * x for x in range(FAN_OUT))
    assert sorted(norm(out)["squares"]) == sorted(reference["squares"])


def test_a_node_pinned_to_one_worker_never_runs_on_another(cluster: GraphCluster, tmp_path: Path) -> None:
    run = "pinned"
    inp = {"run": run, "trail": []}
    general = cluster.start_graph_worker("without-gpu")
    app = cluster.app("pinned")
    with ThreadPoolExecutor(1) as pool:
        pending = in_background(pool, app.invoke, inp, config(run))
        wait_until(lambda: cluster.ledger.has(f"{run}/prep"), WAIT, "the first node")
        gpu = cluster.start_graph_worker("gpu")
        out = pending.result(timeout=WAIT)

    assert norm(out) == plain_result(tmp_path, "pinned", run, inp)
    assert pids(cluster.ledger, f"{run}/") == {
        f"{run}/prep": {general.pid},
        f"{run}/gpu": {gpu.pid},
        f"{run}/post": {general.pid},
    }


def test_a_durable_retry_counts_attempts_across_a_worker_crash(cluster: GraphCluster, tmp_path: Path) -> None:
    run = "retry-crash"
    inp = {"run": run, "trail": []}
    first = cluster.start_graph_worker()
    app = cluster.app("retry")
    iid = instance_id("retry", run)
    with ThreadPoolExecutor(1) as pool:
        pending = in_background(pool, app.invoke, inp, config(run))
        # The first attempt's failure is recorded; its durable retry waits on a timer when the worker dies.
        wait_until(lambda: "taskFailed" in history_kinds(cluster, iid), WAIT, "the first attempt's failure")
        cluster.kill_worker(first)
        assert cluster.ledger.attempts()[f"{run}/flaky"] == 1
        second = cluster.start_graph_worker()
        out = pending.result(timeout=WAIT)

    assert cluster.ledger.attempts()[f"{run}/flaky"] == 3
    assert pids(cluster.ledger, f"{run}/flaky") == {f"{run}/flaky": {first.pid, second.pid}}
    assert norm(out) == {"run": run, "trail": ["done on attempt 3"]}


def test_a_retried_attempts_tokens_carry_its_attempt_after_a_worker_crash(cluster: GraphCluster) -> None:
    run = "speak-crash"
    first = cluster.start_graph_worker()
    app = cluster.app("speaker")
    chunks = app.stream({"run": run, "messages": [("user", "hi")]}, config(run), stream_mode="messages")
    # The first token arrives while the node waits between its two tokens: the worker dies mid-answer.
    token, metadata = next(chunks)
    assert token.content == "Hel" and "durabletask_attempt" not in metadata
    cluster.kill_worker(first)
    second = cluster.start_graph_worker()
    release_file(cluster.ledger, run).touch()
    rest = [(t.content, m.get("durabletask_attempt"), m["langgraph_node"]) for t, m in chunks]

    # The task ran again on the new worker; its tokens say they are the second attempt's.
    assert [r for r in rest if r[0]] == [("Hel", 2, "speak"), ("lo", 2, "speak")]
    assert pids(cluster.ledger, f"{run}/speak") == {f"{run}/speak": {first.pid, second.pid}}
    assert [m.content for m in app.get_state(config(run)).values["messages"]] == ["hi", "Hello"]
