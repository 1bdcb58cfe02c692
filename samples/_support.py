"""Shared plumbing for the samples: run on the embedded emulator, or on managed DTS given a connection string.

Every sample accepts ``--connection-string`` (or the ``DURABLETASK_CONNECTION_STRING`` environment variable).
Without one it starts the emulator in-process on a free port, with an in-memory store.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from durabletask import client, worker

ENV_VAR = "DURABLETASK_CONNECTION_STRING"


def parse_args(description: str, extra: Any = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--connection-string", default=os.environ.get(ENV_VAR),
                        help=f"run on managed DTS (env {ENV_VAR}); default: the embedded emulator")
    parser.add_argument("--address", help="use an emulator already listening at host:port")
    if extra is not None:
        extra(parser)
    return parser.parse_args()


class Runtime:
    """Where a sample runs; starts and stops the embedded emulator when no endpoint is given."""

    def __init__(self, connection_string: str | None = None, address: str | None = None,
                 db_path: str | None = None, clock: Any = None, otlp_endpoint: str | None = None) -> None:
        self.connection_string = connection_string
        self.address = address
        self._otlp_endpoint = otlp_endpoint  # the embedded emulator exports its own spans there
        self._db_path = db_path
        self._clock = clock  # the embedded emulator's clock (e.g. a ManualClock to skip time); None: real time
        self._server: Any = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Runtime:
        return cls(args.connection_string, args.address, otlp_endpoint=getattr(args, "otlp_endpoint", None))

    def __enter__(self) -> Runtime:
        if not self.connection_string and not self.address:
            from dtscale_emulator.server import EmulatorServer

            self._server = EmulatorServer(port=0, in_memory=self._db_path is None, db_path=self._db_path,
                                          clock=self._clock, otlp_endpoint=self._otlp_endpoint)
            self._server.start()
            self.address = f"localhost:{self._server.port}"
            print(f"[emulator] listening on {self.address}")
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._server is not None:
            self._server.stop()

    def client(self, **kwargs: Any) -> client.TaskHubGrpcClient:
        if self.connection_string:
            from durabletask.azuremanaged.client import DurableTaskSchedulerClient

            return DurableTaskSchedulerClient.from_connection_string(self.connection_string, **kwargs)
        return client.TaskHubGrpcClient(host_address=self.address, **kwargs)

    def worker(self, **kwargs: Any) -> worker.TaskHubGrpcWorker:
        if self.connection_string:
            from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

            return DurableTaskSchedulerWorker.from_connection_string(self.connection_string, **kwargs)
        return worker.TaskHubGrpcWorker(host_address=self.address, **kwargs)

    def endpoint_args(self) -> list[str]:
        """Command-line arguments that point a child process at the same place."""
        if self.connection_string:
            return ["--connection-string", self.connection_string]
        assert self.address is not None
        return ["--address", self.address]


def wait_for_custom_status(c: client.TaskHubGrpcClient, instance_id: str, needle: str, timeout: float = 30) -> None:
    """Poll until the instance's custom status mentions ``needle`` (the sample's way to see where it waits)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = c.get_orchestration_state(instance_id)
        if state and state.serialized_custom_status and needle in state.serialized_custom_status:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{instance_id} never reported {needle!r} in its custom status")


def spawn_worker_process(script: str, rt: Runtime, *args: str) -> Any:
    """Start ``script`` as a worker process pointed at ``rt``; returns once it printed its ready line.

    The child runs until its stdin is closed (see :func:`stop_worker_processes`).
    """
    import subprocess

    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parent / script), *args,
                             *rt.endpoint_args()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    print(proc.stdout.readline().strip())
    return proc


def stop_worker_processes(procs: list[Any]) -> None:
    for proc in procs:
        proc.stdin.close()
        proc.wait(timeout=30)
