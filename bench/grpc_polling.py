"""What the SDK's gRPC client polling saves per call: client CPU per unary call, grpc's default against the SDK's.

``durabletask.grpc_options.enable_thread_polling()`` imports grpc with its ``event_engine_client`` experiment off
(durabletask/_grpc_polling.py); it is opt-in. This starts bench/bare_server.py (answers at once, does no work) and,
round after round, a client process of each kind: ``default`` imports durabletask and grpc without opting in
(grpc's own polling), ``sdk`` calls ``enable_thread_polling()`` first, as a program that opts in does. Each client
makes empty unary ``Hello`` calls in four ways (one after another; from 6 threads, as a worker's completion threads;
8 futures in flight; 8 ``grpc.aio`` calls in flight) and reports its own CPU per call over the measured loop. Prints
medians and ratios, never asserts.

Usage: .venv/bin/python bench/grpc_polling.py [--calls 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf import empty_pb2  # protobuf alone: grpc is imported by the client, in the order it is given

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402

WAYS = ("sequential", "6 threads", "8 futures", "8 aio calls")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _sequential(stub: Any, calls: int) -> None:
    empty = empty_pb2.Empty()
    for _ in range(calls):
        stub.Hello(empty, timeout=10)


def _threads(stub: Any, calls: int) -> None:
    started = [threading.Thread(target=_sequential, args=(stub, calls // 6)) for _ in range(6)]
    for t in started:
        t.start()
    for t in started:
        t.join()


def _futures(stub: Any, calls: int) -> None:
    empty = empty_pb2.Empty()
    pending: list[Any] = []
    for _ in range(calls):
        pending.append(stub.Hello.future(empty, timeout=10))
        if len(pending) >= 8:
            pending.pop(0).result()
    for future in pending:
        future.result()


async def _aio_calls(address: str, calls: int) -> None:
    import grpc

    from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

    empty = empty_pb2.Empty()
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        for _ in range(200):  # warm up
            await stub.Hello(empty, timeout=10)
        gate = asyncio.Semaphore(8)

        async def one() -> None:
            async with gate:
                await stub.Hello(empty, timeout=10)

        await asyncio.gather(*(one() for _ in range(calls)))


def _client(address: str, calls: int, polling: str) -> dict[str, Any]:
    """Runs in the client process: the calls of each way, with this process's CPU per call."""
    # ``default``: no opt-in, so grpc keeps its own polling; ``sdk``: opted in before grpc's first import.
    from durabletask import _grpc_polling
    from durabletask.grpc_options import enable_thread_polling

    if polling == "sdk":
        enable_thread_polling()
    import grpc

    from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

    channel = grpc.insecure_channel(address)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    _sequential(stub, 200)  # warm up
    ways: dict[str, Callable[[], object]] = {
        "sequential": lambda: _sequential(stub, calls),
        "6 threads": lambda: _threads(stub, calls),
        "8 futures": lambda: _futures(stub, calls),
        "8 aio calls": lambda: asyncio.run(_aio_calls(address, calls)),
    }
    result: dict[str, Any] = {"state": _grpc_polling.state().name}
    for way, run in ways.items():
        before = _cpu()
        run()
        result[way] = (_cpu() - before) / calls * 1e6
    channel.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client", nargs=2, metavar=("ADDRESS", "POLLING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(_client(args.client[0], args.calls, args.client[1])))
        return 0
    port = run_all._free_port()
    server = run_all._spawn(run_all.OURS_PY, ["bare_server.py", str(port)], for_peer=False)
    runs: dict[str, list[dict[str, Any]]] = {"default": [], "sdk": []}
    try:
        run_all._await_ready(server, "bare_server.py")
        for number in range(1, args.rounds + 1):
            for polling in runs:  # interleaved: both kinds once per round
                out = subprocess.run(
                    [run_all.OURS_PY, __file__, "--calls", str(args.calls), "--client", f"127.0.0.1:{port}", polling],
                    cwd=HERE, env=run_all._env(False), capture_output=True, text=True, timeout=600, check=True,
                )  # fmt: skip
                runs[polling].append(json.loads(out.stdout.strip().splitlines()[-1]))
                found = runs[polling][-1]
                figures = ", ".join(f"{way} {found[way]:.0f} µs" for way in WAYS)
                print(f"round {number} {polling:7s} ({found['state']}): client CPU per call: {figures}", flush=True)
    finally:
        run_all._close(server)
    print(f"medians of {args.rounds} rounds, {args.calls} calls each way, client CPU per unary call:")
    for way in WAYS:
        default = statistics.median(r[way] for r in runs["default"])
        sdk = statistics.median(r[way] for r in runs["sdk"])
        print(f"  {way:12s} grpc's default {default:6.0f} µs   the SDK's {sdk:6.0f} µs   {1 - sdk / default:.0%} less")
    return 0


if __name__ == "__main__":
    sys.exit(main())
