"""A backend outage while activities complete: results wait for the backend instead of being dropped and rerun.

Real processes: an emulator on a fixed SQLite file and port and a worker process completing activities, each of
which counts its runs in a shared ledger. The network between them is cut for a few seconds (the emulator keeps
running, and so keeps its leases); or the emulator itself is killed and started again on the same file and port
(the new process keeps the activity leases it finds in the store for its restart grace, 15 s by default).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from durabletask import client
from durabletask.entities import EntityInstanceId
from tests.support.reliability import Ledger, free_port, kill, start_emulator, start_script, wait_done, wait_until

from .tcp_cut import CuttableRelay

APP = Path(__file__).with_name("outage_worker_app.py")
ENTITY_APP = Path(__file__).with_name("entity_outage_worker_app.py")
INSTANCES, STEPS = 24, 12
ENTITIES, OPERATIONS = 6, 60
# Longer than the old delivery retries lasted (about 1.5 s), well within the emulator's lease.
OUTAGE_SECONDS = 4.0
# Short enough that a result the worker dropped is handed out again (and run twice) while the test waits.
LEASE_SECONDS = 15
EMULATOR_ARGS = ("--health-ping-interval", "0.5", "--lease-timeout", str(LEASE_SECONDS))


class Outage:
    """One emulator process on a fixed file and port, one worker process behind a relay, one ledger."""

    def __init__(self, folder: Path, app: Path = APP) -> None:
        self.db, self.port = folder / "emulator.db", free_port()
        self.ledger = Ledger(folder / "ledger.db")
        self.log = folder / "worker.log"
        self.emulator: subprocess.Popen[str] | None = start_emulator(self.db, self.port, *EMULATOR_ARGS)
        self.relay = CuttableRelay(("127.0.0.1", self.port))
        self.worker = start_script(app, self.relay.address, str(self.ledger.path), log=self.log)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut_network(self, down_for: float) -> None:
        self.relay.cut()
        time.sleep(down_for)  # the outage itself, not a wait for a condition
        self.relay.restore()

    def restart_emulator(self, down_for: float, sig: int = signal.SIGKILL) -> None:
        """SIGKILL: a crash, no goodbye to the worker's calls in flight; SIGTERM: a graceful stop (its grace)."""
        assert self.emulator is not None
        kill(self.emulator, sig)
        self.emulator = None
        time.sleep(down_for)  # the outage itself
        self.emulator = start_emulator(self.db, self.port, *EMULATOR_ARGS)

    def run(self, outage: str) -> dict[str, int]:
        """Runs the chains through ``outage``; returns how often each activity ran."""
        with client.TaskHubGrpcClient(host_address=self.address) as c:
            ids = [c.schedule_new_orchestration("chain", input=STEPS, instance_id=f"o-{i}") for i in range(INSTANCES)]
        total = INSTANCES * STEPS
        wait_until(lambda: len(self.ledger.effects()) >= total // 6, 120, "a sixth of the activities to run")
        if outage == "network":
            self.cut_network(OUTAGE_SECONDS)
        else:
            self.restart_emulator(OUTAGE_SECONDS, signal.SIGTERM if outage == "graceful" else signal.SIGKILL)
        with client.TaskHubGrpcClient(host_address=self.address) as c:
            states = wait_done(c, ids, 240)
        assert {s.runtime_status for s in states.values()} == {client.OrchestrationStatus.COMPLETED}
        attempts = dict(self.ledger.attempts())
        assert set(attempts) == {f"o-{i}/{s}" for i in range(INSTANCES) for s in range(STEPS)}
        return attempts

    def run_entities(self) -> dict[str, int]:
        """Signals the entities and restarts the emulator while they run; returns how often each operation ran."""
        keys = [f"e-{e}/{n}" for n in range(OPERATIONS) for e in range(ENTITIES)]
        with client.TaskHubGrpcClient(host_address=self.address) as c:
            for key in keys:
                c.signal_entity(EntityInstanceId("recorder", key.split("/")[0]), "record", input=key)
        wait_until(lambda: len(self.ledger.effects()) >= len(keys) // 6, 120, "a sixth of the operations to run")
        self.restart_emulator(OUTAGE_SECONDS)
        wait_until(lambda: len(self.ledger.effects()) == len(keys), 120, "every operation to run")
        # Every operation may have run before the emulator came back, its batch's result still on the way: the
        # run ends once the emulator holds each entity's result of all its operations, not only once they ran.
        with client.TaskHubGrpcClient(host_address=self.address) as c:
            done = [OPERATIONS] * ENTITIES
            wait_until(lambda: _entity_counts(c) == done, 120, "every entity to hold the result of all its operations")
        attempts = dict(self.ledger.attempts())
        assert set(attempts) == set(keys)
        return attempts

    def close(self) -> None:
        kill(self.worker, signal.SIGTERM)
        self.relay.close()
        if self.emulator is not None:
            kill(self.emulator, signal.SIGTERM)


def _entity_counts(c: client.TaskHubGrpcClient) -> list[int]:
    """Each recorder's state as the emulator has it now: how many of its operations' results it took."""
    try:
        found = [c.get_entity(EntityInstanceId("recorder", f"e-{e}")) for e in range(ENTITIES)]
    except grpc.RpcError:  # the emulator is still starting
        return []
    return [0 if entity is None else int(entity.get_state(int) or 0) for entity in found]


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[Outage]:
    rig = Outage(tmp_path)
    try:
        yield rig
    finally:
        rig.close()


@pytest.fixture
def entity_outage(tmp_path: Path) -> Iterator[Outage]:
    rig = Outage(tmp_path, ENTITY_APP)
    try:
        yield rig
    finally:
        rig.close()


@pytest.mark.adversarial
@pytest.mark.timeout(300)
def test_every_activity_runs_once_across_a_network_outage(outage: Outage) -> None:
    attempts = outage.run("network")
    log = outage.log.read_text()
    assert {key: n for key, n in attempts.items() if n != 1} == {}, log[-4000:]
    # The outage hit results on their way: they were held back and delivered once the network was back.
    assert "retrying the result of activity" in log, log[-4000:]
    assert "delivered the result of activity" in log, log[-4000:]


@pytest.mark.adversarial
@pytest.mark.timeout(300)
def test_every_activity_runs_once_across_an_emulator_restart(outage: Outage) -> None:
    attempts = outage.run("restart")
    log = outage.log.read_text()
    assert {key: n for key, n in attempts.items() if n != 1} == {}, log[-4000:]
    # Results on their way when the emulator died were delivered to the new process, under their old tokens.
    assert "retrying the result of activity" in log, log[-4000:]
    assert "delivered the result of activity" in log, log[-4000:]
    # A "dropping the result" line may appear, and is no rerun (every activity ran once, above): the kill can land
    # after the old process committed a result and before its answer left, so the worker sends it again and the
    # new process, which never saw that token, refuses it. How often that happens is a matter of timing.


@pytest.mark.adversarial
@pytest.mark.timeout(300)
def test_every_activity_runs_once_across_a_graceful_emulator_stop(outage: Outage) -> None:
    # SIGTERM, as `docker stop` or Ctrl-C: before, the stop handed every lease back and cut the results in flight,
    # and five or six activities ran again after the restart, where a kill -9 reran none.
    attempts = outage.run("graceful")
    log = outage.log.read_text()
    assert {key: n for key, n in attempts.items() if n != 1} == {}, log[-4000:]


@pytest.mark.adversarial
@pytest.mark.timeout(300)
def test_every_entity_operation_runs_once_across_an_emulator_restart(entity_outage: Outage) -> None:
    attempts = entity_outage.run_entities()
    log = entity_outage.log.read_text()
    assert {key: n for key, n in attempts.items() if n != 1} == {}, log[-4000:]
    # Batches on their way when the emulator died were matched to their operations by the new process. The worker
    # writes that line once the call returns, a moment after the emulator made the result visible.
    assert "retrying the entity batch result" in log, log[-4000:]
    wait_until(lambda: "delivered the entity batch result" in entity_outage.log.read_text(), 30, "the delivered line")
