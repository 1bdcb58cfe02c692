"""StartInstance latency with many idle GetWorkItems streams open (prints, never asserts).

Each configuration runs a fresh emulator in its own process (in memory, health pings an hour apart) and opens
N idle work-item streams from this process, either filtered to an orchestration name nobody starts ("other")
or taking every name ("matching"). It then starts orchestrations one after another and times each
StartInstance call. A change wakes only the streams that can take its work, and of idle streams that would all
find the same work only one: in both cases the latency should stay near the 0-stream figure. (A matching stream
leases the work and, never reading, keeps it; the default limit of 100 per stream is far from reached.)

The table gives absolute figures and the ratio of each median to the 0-stream median.

Usage: .venv/bin/python bench/stream_wakeups.py [--streams 0,100,500,2000] [--starts 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
from google.protobuf import empty_pb2  # noqa: E402

from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402

HUB = [("taskhub", "default")]
STREAMS_PER_CHANNEL = 100
SERVER = """
import sys
from dtscale_emulator.server import EmulatorServer
server = EmulatorServer(port=int(sys.argv[1]), in_memory=True, health_ping_interval=3600.0).start()
print("ready", flush=True)
sys.stdin.read()
server.close()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(kind: str) -> pb.GetWorkItemsRequest:
    if kind == "matching":
        return pb.GetWorkItemsRequest()
    only_other = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="NobodyStartsThis")])
    return pb.GetWorkItemsRequest(workItemFilters=only_other)


def _open_streams(address: str, count: int, kind: str) -> tuple[list[grpc.Channel], list[Any]]:
    channels: list[grpc.Channel] = []
    calls: list[Any] = []
    for n in range(count):
        if n % STREAMS_PER_CHANNEL == 0:
            channels.append(grpc.insecure_channel(address))
        stub = pb_grpc.TaskHubSidecarServiceStub(channels[-1])
        calls.append(stub.GetWorkItems(_request(kind), metadata=HUB))
    return channels, calls


def _settle(stub: pb_grpc.TaskHubSidecarServiceStub) -> None:
    """Returns once the emulator answers promptly again after the streams opened."""
    for _ in range(20):
        began = time.perf_counter()
        stub.Hello(empty_pb2.Empty(), metadata=HUB, timeout=60)
        if time.perf_counter() - began < 0.005:
            return
        time.sleep(0.1)


def measure(streams: int, kind: str, starts: int) -> dict[str, Any]:
    """Opens ``streams`` idle streams of ``kind`` on a fresh emulator and times ``starts`` StartInstance calls."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    channels: list[grpc.Channel] = []
    try:
        assert server.stdout is not None and server.stdout.readline() == "ready\n"
        address = f"127.0.0.1:{port}"
        channels, calls = _open_streams(address, streams, kind)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            _settle(stub)
            latencies = []
            for _ in range(starts):
                request = pb.CreateInstanceRequest(instanceId=uuid.uuid4().hex, name="Started")
                began = time.perf_counter()
                stub.StartInstance(request, metadata=HUB, timeout=60)
                latencies.append((time.perf_counter() - began) * 1000)
                time.sleep(0.002)  # let the woken streams run before the next start, as between real requests
        for call in calls:
            call.cancel()
    finally:
        for channel in channels:
            channel.close()
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=60)
    latencies.sort()
    return {
        "streams": streams,
        "kind": kind,
        "median_ms": statistics.median(latencies),
        "p90_ms": latencies[int(len(latencies) * 0.9) - 1],
    }


def _table(rows: list[dict[str, Any]]) -> str:
    base = {r["kind"]: r["median_ms"] for r in rows if r["streams"] == 0}
    lines = [
        "| idle streams | streams take | StartInstance median (ms) | p90 (ms) | median vs 0 streams |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        ratio = r["median_ms"] / base[r["kind"]] if base.get(r["kind"]) else float("nan")
        taken = "another name" if r["kind"] == "other" else "every name"
        lines.append(f"| {r['streams']} | {taken} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} | {ratio:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="0,100,500,2000", help="idle stream counts, comma-separated")
    parser.add_argument("--starts", type=int, default=200, help="StartInstance calls timed per configuration")
    parser.add_argument("--kinds", default="other,matching", help="other (filtered to another name), matching")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args()
    counts = [int(n) for n in args.streams.split(",")]
    rows = [measure(n, kind, args.starts) for kind in args.kinds.split(",") for n in counts]
    print(json.dumps(rows, indent=2) if args.json else _table(rows))


if __name__ == "__main__":
    main()
