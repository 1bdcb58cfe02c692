"""A worker that stops answering (a frozen process, a host gone without closing its connection) loses its stream.

The emulator pings every connection with open calls; one that does not answer in time is closed, and the work
its stream held goes back at once instead of after the lease timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer

from .conftest import HubStub, WorkStream, start

ROOT = Path(__file__).resolve().parents[3]
# A worker that opens a work-item stream, says so, and reads it until it is stopped.
READER = """
import sys, grpc
from durabletask._proto import orchestrator_service_pb2 as pb, orchestrator_service_pb2_grpc as pbg
channel = grpc.insecure_channel(sys.argv[1])
call = pbg.TaskHubSidecarServiceStub(channel).GetWorkItems(pb.GetWorkItemsRequest(), metadata=[("taskhub", "default")])
print("open", flush=True)
for item in call:
    print("item", item.WhichOneof("request"), flush=True)
"""


def test_a_frozen_worker_is_dropped_and_its_work_goes_to_another_before_the_lease_times_out() -> None:
    server = EmulatorServer(port=0, in_memory=True, lease_timeout=300, keepalive_interval=0.5, keepalive_timeout=1.0)
    server.start()
    frozen = subprocess.Popen(
        [sys.executable, "-c", READER, server.address], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert frozen.stdout is not None and frozen.stdout.readline() == "open\n"
        assert server.faults.wait_for_streams(1)
        with grpc.insecure_channel(server.address) as channel:
            stub = HubStub(channel, "default")
            iid = start(stub)
            assert frozen.stdout.readline() == "item orchestratorRequest\n"  # leased to the worker about to freeze
            frozen.send_signal(signal.SIGSTOP)
            deadline = time.monotonic() + 15
            while server.faults.open_streams and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.faults.open_streams == 0, "the frozen worker's stream is still open"
            # Its lease ended with its stream: a healthy worker gets the orchestration now, not in 300 s.
            healthy = WorkStream(stub)
            assert healthy.next(timeout=10).orchestratorRequest.instanceId == iid
            healthy.cancel()
    finally:
        frozen.kill()
        frozen.wait(timeout=10)
        frozen.stdout.close() if frozen.stdout else None
        server.close()


def test_keepalive_settings_out_of_range_are_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match=r"keepalive_timeout must be between 0\.001 and 86400 seconds, got 0"):
        EmulatorServer(port=0, in_memory=True, keepalive_timeout=0)
    proc = subprocess.run([sys.executable, "-m", "dtscale_emulator", "--in-memory", "--keepalive-interval", "-1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "--keepalive-interval must be between 0.001 and 86400 seconds" in proc.stderr
