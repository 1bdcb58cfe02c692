"""The recovery demonstrations built on bounded activities, with real worker processes: an uncertain write bounded by
``start_to_close_timeout``, an extraction cancelled by a user, resumed after its worker is SIGKILLed, terminated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from durabletask import client
from tests.support.holding_proxy import HoldingProxy
from tests.support.reliability import save_history, wait_done, wait_until

from .conftest import Cluster

COMPLETED = client.OrchestrationStatus.COMPLETED
TERMINATED = client.OrchestrationStatus.TERMINATED
LONG = {"pages": 100_000, "mark_at": 5}


def _output(state: client.OrchestrationState) -> object:
    assert state.runtime_status == COMPLETED, state.failure_details
    return json.loads(state.serialized_output or "null")


def test_an_uncertain_write_is_bounded_by_its_timeout_and_reconciled(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    iid = c.schedule_new_orchestration("bounded_write", instance_id=cluster.id("bounded-write"))
    assert _output(wait_done(c, [iid], 60)[iid]) == "reconciled"
    # The write happened once, and the hanging attempt was told to stop once it timed out.
    wait_until(lambda: cluster.ledger.has(f"{iid}/write/stopped"), 30, "the timed-out write to stop")
    assert cluster.ledger.attempts()[f"{iid}/write"] == 1
    save_history("recovery-bounded-write", cluster.history(iid))


def test_a_cancelled_extraction_stops_within_seconds_and_compensates(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    iid = c.schedule_new_orchestration("bounded_extraction", input=LONG, instance_id=cluster.id("bounded-cancel"))
    wait_until(lambda: cluster.ledger.has(f"{iid}/reached-5"), 30, "the extraction to heartbeat")
    c.raise_orchestration_event(iid, "cancel")
    assert _output(wait_done(c, [iid], 30)[iid]) == "cancelled"
    wait_until(lambda: cluster.ledger.has(f"{iid}/stopped-at"), 30, "the extraction to stop")
    assert cluster.ledger.attempts()[f"{iid}/compensate"] == 1
    save_history("recovery-bounded-cancel", cluster.history(iid))


def test_an_extraction_whose_worker_is_killed_resumes_from_its_last_heartbeat(cluster: Cluster) -> None:
    first = cluster.start_worker()
    c = cluster.client
    plan = {"pages": 100, "mark_at": 45, "page_seconds": 0.05, "heartbeat_seconds": 2}
    iid = c.schedule_new_orchestration("bounded_extraction", input=plan, instance_id=cluster.id("bounded-kill"))
    wait_until(lambda: cluster.ledger.has(f"{iid}/reached-45"), 30, "the extraction to heartbeat")
    cluster.kill_worker(first)  # SIGKILL: no result, no more heartbeats
    cluster.start_worker()
    result = _output(wait_done(c, [iid], 60)[iid])
    assert isinstance(result, dict) and result["pages"] == 100
    # The next attempt started where the killed one's heartbeats had got to (the first heartbeat, page 0, is sent
    # at once; the next after 0.8 x 2 s, around page 32), not from the beginning.
    assert result["resumed_from"] >= 1
    assert cluster.ledger.has(f"{iid}/attempt-from-{result['resumed_from']}")
    events = cluster.history(iid)
    scheduled = [e for e in events if e.HasField("taskScheduled") and e.taskScheduled.name == "extract_pages"]
    assert len(scheduled) == 2  # the heartbeat timeout retried the attempt; the lease did not
    save_history("recovery-bounded-kill-resume", events)


def test_terminate_stops_the_running_extraction(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    iid = c.schedule_new_orchestration("bounded_extraction", input=LONG, instance_id=cluster.id("bounded-terminate"))
    wait_until(lambda: cluster.ledger.has(f"{iid}/reached-5"), 30, "the extraction to heartbeat")
    c.terminate_orchestration(iid, output="stopped by operator")
    assert wait_done(c, [iid], 30)[iid].runtime_status == TERMINATED
    wait_until(lambda: cluster.ledger.has(f"{iid}/stopped-at"), 30, "the extraction to stop")
    assert not cluster.ledger.has(f"{iid}/compensate")


ROLES_APP = Path(__file__).with_name("bounded_roles_app.py")
# Far beyond the test's own timeout: a retry the test sees cannot have come from the lease expiring.
PATIENT = ("--lease-timeout", "3600", "--keepalive-interval", "3600", "--keepalive-timeout", "3600")


@pytest.mark.emulator_internals("sets the emulator's lease and keepalive timeouts; holds a connection open")
def test_a_killed_workers_attempt_is_retried_by_its_heartbeat_timeout_not_its_lease(cluster: Cluster) -> None:
    cluster.kill_emulator()
    cluster.start_emulator(*PATIENT)
    log = cluster.folder / "workers.log"
    cluster.start_app(ROLES_APP, cluster.address, str(cluster.ledger.path), "orchestrations", log=log)
    # The activity worker reaches the emulator through a proxy that, once the worker is killed, keeps the
    # emulator's side of its connections open: the emulator sees a silent worker, not a closed stream, so it
    # neither frees the attempt's lease nor offers it again.
    proxy = HoldingProxy(("127.0.0.1", cluster.port))
    try:
        doomed = cluster.start_app(ROLES_APP, proxy.address, str(cluster.ledger.path), "activities", log=log)
        c = cluster.client
        plan = {"pages": 100, "mark_at": 45, "page_seconds": 0.05, "heartbeat_seconds": 2}
        iid = c.schedule_new_orchestration("watched_extraction", input=plan, instance_id=cluster.id("hb-kill"))
        wait_until(lambda: cluster.ledger.has(f"{iid}/reached-45"), 60, "the extraction to heartbeat")
        cluster.kill_worker(doomed)  # SIGKILL: no result, no more heartbeats, and no closed connection
        cluster.start_app(ROLES_APP, cluster.address, str(cluster.ledger.path), "activities", log=log)
        result = _output(wait_done(c, [iid], 90)[iid])
    finally:
        proxy.close()
    assert isinstance(result, dict) and result["pages"] == 100
    # The retry was made because the heartbeat timeout fired, and for no other reason.
    assert result["retried_after"] == [["durabletask.task.ActivityTimeoutError", "heartbeat"]]
    events = cluster.history(iid)
    scheduled = [e.eventId for e in events if e.HasField("taskScheduled") and e.taskScheduled.name == "extract_pages"]
    assert len(scheduled) == 2
    beats = [
        json.loads(e.eventRaised.input.value)
        for e in events
        if e.HasField("eventRaised") and e.eventRaised.name == "dtscale.activity"
    ]
    first_beats = [b for b in beats if b["task"] == scheduled[0] and b["kind"] == "beat"]
    assert len(first_beats) >= 2  # the first heartbeat (page 0) at once, later ones every 0.8 x 2 s
    # The retry resumed from the last details the killed attempt had sent, not from the beginning.
    assert result["resumed_from"] == json.loads(first_beats[-1]["details"]) >= 1
    assert cluster.ledger.attempts()[f"{iid}/attempt-from-0"] == 1
    assert cluster.ledger.has(f"{iid}/attempt-from-{result['resumed_from']}")
    save_history("recovery-bounded-heartbeat-timeout", events)
