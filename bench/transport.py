"""Transport floors, measured from a separate client process.

``transport.py wall ADDRESS CALLS IN_FLIGHT``: empty unary Hello calls per second against any backend,
sequential or with calls in flight; prints JSON.

``transport.py unary-cpu ADDRESS CALLS THREADS`` (THREADS may be ``worker``: our worker's completion threads) and
``transport.py stream-cpu ADDRESS MESSAGES``, against bench/bare_server.py: warms up, prints ``warm``, waits for a
line on stdin (the caller reads the server's CPU then), runs the measured loop, prints JSON with the wall time and
this process's CPU seconds over that loop alone (the caller reads the server's CPU again when the JSON arrives).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from durabletask.grpc_options import enable_thread_polling

# First, before grpc is imported: the floor measured is the SDK's, with its opt-in client polling on.
enable_thread_polling()

# isort: split
import grpc  # noqa: E402
from google.protobuf import empty_pb2  # noqa: E402

from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402
from durabletask._worker.options import ConcurrencyOptions  # noqa: E402

# Our worker sends each completion as one blocking unary call from the thread that ran the work item, so
# completions go out from at most this many threads at once (its default pool size).
WORKER_THREADS = ConcurrencyOptions().maximum_thread_pool_workers or 1


def measure(address: str, calls: int, in_flight: int) -> float:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.Hello(empty_pb2.Empty(), timeout=10)
        start = time.perf_counter()
        if in_flight <= 1:
            for _ in range(calls):
                stub.Hello(empty_pb2.Empty(), timeout=10)
        else:
            pending = []
            for _ in range(calls):
                pending.append(stub.Hello.future(empty_pb2.Empty(), timeout=30))
                if len(pending) >= in_flight:
                    pending.pop(0).result()
            for fut in pending:
                fut.result()
        return calls / (time.perf_counter() - start)


def _blocking_hellos(stub: pb_grpc.TaskHubSidecarServiceStub, calls: int, threads: int) -> None:
    def run(count: int) -> None:
        for _ in range(count):
            stub.Hello(empty_pb2.Empty(), timeout=30)

    if threads == 1:
        run(calls)
        return
    shares = [calls // threads + (1 if i < calls % threads else 0) for i in range(threads)]
    workers = [threading.Thread(target=run, args=(n,)) for n in shares]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


def _stream(stub: pb_grpc.TaskHubSidecarServiceStub, messages: int) -> None:
    received = sum(1 for _ in stub.GetWorkItems(pb.GetWorkItemsRequest(maxConcurrentActivityWorkItems=messages)))
    if received != messages:
        raise RuntimeError(f"expected {messages} streamed messages, got {received}")


def _timed_after_go(loop: Callable[[], None]) -> dict[str, float]:
    print("warm", flush=True)
    sys.stdin.readline()
    cpu, start = time.process_time(), time.perf_counter()  # process_time: every thread of this process
    loop()
    return {"seconds": time.perf_counter() - start, "client_cpu": time.process_time() - cpu}


def cpu_run(mode: str, address: str, count: int, threads: int) -> dict[str, Any]:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        if mode == "unary-cpu":
            _blocking_hellos(stub, 200, threads)  # connection, server threads, code paths all warm
            result = _timed_after_go(lambda: _blocking_hellos(stub, count, threads))
        else:
            _stream(stub, 1000)
            result = _timed_after_go(lambda: _stream(stub, count))
    return {"mode": mode, "count": count, "threads": threads, **result}


def main() -> None:
    mode, address = sys.argv[1], sys.argv[2]
    if mode == "wall":
        calls, in_flight = int(sys.argv[3]), int(sys.argv[4])
        result: dict[str, Any] = {"calls_per_second": measure(address, calls, in_flight), "in_flight": in_flight}
    elif mode in {"unary-cpu", "stream-cpu"}:
        threads = 1 if mode == "stream-cpu" else WORKER_THREADS if sys.argv[4] == "worker" else int(sys.argv[4])
        result = cpu_run(mode, address, int(sys.argv[3]), threads)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
