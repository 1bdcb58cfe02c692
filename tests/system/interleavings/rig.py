"""The interleaving rig: an in-process emulator under an interleaver, a worker of either SDK, and a client.

Time is a manual clock: the interleaver moves it on at some of its pauses (so timers and leases come due while
work is in flight) and a ticker moves it on steadily, so that work waiting only for time still gets there.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from dtscale_emulator.engine.work import Interleaver
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.ops.faults import InterleavingRates, SeededInterleaver
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import InstanceRecord
from durabletask import client
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.conftest import peer_python

from . import workers

HERE = Path(__file__).resolve().parent
#: Emulator seconds the ticker adds every TICK_EVERY real seconds (ten times real time).
TICK = 0.25
TICK_EVERY = 0.025
SDKS = ("ours", "microsoft")


class Ticker:
    """Moves a manual clock on in the background while it runs."""

    def __init__(self, clock: ManualClock) -> None:
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="interleavings-ticker", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(TICK_EVERY):
            self._clock.advance(TICK)

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class PeerWorker:
    """``workers.py`` under Microsoft's SDK, in the peer venv, until :meth:`stop`."""

    def __init__(self, python: Path, address: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # its own durabletask, never ours
        self._proc = subprocess.Popen(
            [str(python), str(HERE / "workers.py"), address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd="/",
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line or "ready" not in json.loads(line):
            raise RuntimeError(f"the peer worker did not start (exit code {self._proc.poll()})")

    def stop(self) -> None:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


@contextmanager
def worker_for(sdk: str, address: str, peer: Path | None) -> Iterator[None]:
    """A worker of ``sdk`` with every workflow, connected to ``address``, for the block."""
    if sdk == "ours":
        w = workers.start_worker(address)
        try:
            yield
        finally:
            w.stop()
        return
    if peer is None:
        raise RuntimeError("Microsoft's SDK needs the peer venv (python3 dev.py test creates it)")
    process = PeerWorker(peer, address)
    try:
        yield
    finally:
        process.stop()


class Rig:
    """One in-memory emulator, a client, and the workers started on it; everything ends with the rig."""

    def __init__(self, server: EmulatorServer, clock: ManualClock | None, stack: ExitStack) -> None:
        self.server = server
        self.clock = clock
        self.interleaver = server.dispatcher.interleaver
        self._stack = stack
        self.client = client.TaskHubGrpcClient(host_address=server.address)
        stack.callback(self.client.close)
        self.hub = "default"

    def start_worker(self, sdk: str) -> None:
        """A worker of ``sdk`` with every workflow, until the rig closes."""
        self._stack.enter_context(worker_for(sdk, self.server.address, peer_python()))

    def record_and_history(self, instance_id: str) -> tuple[InstanceRecord | None, list[pb.HistoryEvent], int]:
        """The stored instance, its history and its stored length, read in one transaction."""
        with self.server.backend.transaction() as tx:
            record = tx.get_instance(self.hub, instance_id)
            raw = tx.history(self.hub, instance_id)
            length = tx.history_length(self.hub, instance_id)
        return record, [pb.HistoryEvent.FromString(r) for r in raw], length

    def queued(self, instance_id: str) -> list[str]:
        """The kinds of the messages queued for an instance, and its lease, for a report."""
        with self.server.backend.transaction() as tx:
            record = tx.get_instance(self.hub, instance_id)
            messages = tx.visible_messages(self.hub, instance_id, 2**62)
        kinds = [str(pb.HistoryEvent.FromString(m.event).WhichOneof("eventType")) for m in messages]
        lease = "none" if record is None or record.lock_token is None else f"until {record.lock_expires}"
        return [*kinds, f"lease {lease}, clock {self.clock.now() if self.clock else None}"]

    def entity_state(self, entity_id: str) -> Any:
        found = self.server.entities.get(self.hub, entity_id)
        return None if found is None or found.record.state is None else json.loads(found.record.state)


def seeded(seed: int, clock: ManualClock, rates: InterleavingRates | None = None) -> SeededInterleaver:
    """A seeded interleaver that moves ``clock`` on at some of its pauses."""
    return SeededInterleaver(seed, rates, advance=lambda: clock.advance(TICK))


@contextmanager
def open_rig(
    interleaver_for: Callable[[ManualClock], Interleaver] | None = None, lease_timeout: float = 120.0
) -> Iterator[Rig]:
    """An emulator under ``interleaver_for(clock)`` on a ticking manual clock; without one, on the system clock."""
    clock = ManualClock() if interleaver_for is not None else None
    with ExitStack() as stack:
        server = EmulatorServer(
            port=0,
            in_memory=True,
            clock=clock,
            lease_timeout=lease_timeout,
            health_ping_interval=1.0,
            interleaver=None if interleaver_for is None or clock is None else interleaver_for(clock),
        )
        server.start()
        stack.callback(server.close)
        if clock is not None:
            stack.enter_context(Ticker(clock))
        yield Rig(server, clock, stack)
