"""Leases across an emulator restart: a store reopened with leased activities and entity batches keeps their tokens
for a short grace.

The first "process" is a bare store and engine that lease work and then vanish without handing anything back (as a
killed process does); the second is an ``EmulatorServer`` opened on the same file (not serving: its dispatcher and
engine are driven directly). One manual clock serves both, so the grace passes only when the test moves it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dtscale_emulator.__main__ import _server, build_parser, main
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.engine.events import sv
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.errors import FailedPreconditionError
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import pb
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import ActivityRecord, EntityRecord, NameFilter, SqliteBackend

pytestmark = pytest.mark.adversarial

HUB = "default"
ENTITY = "@counter@c1"
LEASE = 300.0
GRACE = 15.0


@dataclass
class Crashed:
    """What the vanished process left: the store file and the tokens of its activity, turn and entity batch."""

    db: Path
    clock: ManualClock
    token: str
    instance_id: str
    orchestration_token: str
    entity_token: str


def _leave_leases(db: Path, clock: ManualClock, lease_seconds: float = LEASE) -> Crashed:
    """Leases an activity, two orchestration turns and an entity batch of two signals, then closes the store as
    a crash would (no release)."""
    backend = SqliteBackend(str(db))
    engine = Engine(backend, clock)
    engine.create(HUB, StartOptions("held", "flow"))
    engine.create(HUB, StartOptions("busy", "flow"))
    record = engine.get(HUB, "held")
    assert record is not None
    request = pb.ActivityRequest(
        name="charge",
        taskId=1,
        orchestrationInstance=pb.OrchestrationInstance(instanceId="held", executionId=sv(record.execution_id)),
    )
    with backend.transaction() as tx:
        tx.add_activity(HUB, "held", 1, "charge", None, request.SerializeToString())
    expires = clock.now() + timedelta(seconds=lease_seconds)
    leased, _ = engine.lease_activities(HUB, NameFilter(), ["a" * 32], expires)
    assert [w.request.name for w in leased] == ["charge"]
    turns, _ = engine.lease_orchestrations(HUB, NameFilter(), ["b" * 32, "c" * 32], expires)
    assert {w.instance_id for w in turns} == {"held", "busy"}
    entities = Entities(backend, clock)
    for request_id in ("r1", "r2"):
        entities.signal(HUB, ENTITY, "add", "1", request_id, None)
    batch = entities.fetch(HUB, NameFilter(), "f" * 32, expires)
    assert batch is not None and len(batch.operations) == 2
    backend.close()  # no release_all_leases: the process is gone
    return Crashed(db, clock, "a" * 32, "held", "b" * 32, "f" * 32)


@pytest.fixture
def crashed(tmp_path: Path) -> Crashed:
    return _leave_leases(tmp_path / "emulator.db", ManualClock())


@pytest.fixture
def restarted(crashed: Crashed) -> Iterator[EmulatorServer]:
    server = EmulatorServer(
        port=0, db_path=str(crashed.db), clock=crashed.clock, lease_timeout=LEASE, restart_grace=GRACE
    )
    try:
        yield server
    finally:
        server.close()


def _offered(server: EmulatorServer) -> list[str]:
    """Leases what activities are on offer now; returns their tokens."""
    tokens = server.dispatcher.leases.tokens(4)
    expires = server.clock.now() + timedelta(seconds=LEASE)
    found, _ = server.engine.lease_activities(HUB, NameFilter(), tokens, expires)
    return tokens[: len(found)]


def _result(token: str) -> pb.ActivityResponse:
    return pb.ActivityResponse(instanceId="held", taskId=1, result=sv('"paid"'), completionToken=token)


def _task_results(server: EmulatorServer, instance_id: str) -> list[str]:
    with server.backend.transaction() as tx:
        queued = tx.visible_messages(HUB, instance_id, 2**62)
    events = [pb.HistoryEvent.FromString(m.event) for m in queued]
    return [e.taskCompleted.result.value for e in events if e.HasField("taskCompleted")]


def test_a_result_delivered_within_the_grace_counts_and_the_activity_is_not_offered_meanwhile(
    crashed: Crashed, restarted: EmulatorServer
) -> None:
    assert _offered(restarted) == []
    crashed.clock.advance(GRACE - 1)
    assert _offered(restarted) == []
    restarted.dispatcher.complete_activity(HUB, _result(crashed.token))
    assert _task_results(restarted, "held") == ['"paid"']
    crashed.clock.advance(GRACE)
    assert _offered(restarted) == []  # done: nothing to run again
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.complete_activity(HUB, _result(crashed.token))  # a token counts once


def test_after_the_grace_the_activity_is_offered_again_and_the_old_token_is_refused(
    crashed: Crashed, restarted: EmulatorServer
) -> None:
    crashed.clock.advance(GRACE)
    again = _offered(restarted)
    assert len(again) == 1
    # The book still has the old lease (the bare engine call leased past it); the stored row refuses it.
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.complete_activity(HUB, _result(crashed.token))
    assert _task_results(restarted, "held") == []
    restarted.engine.complete_activity(HUB, _activity_id(restarted, again[0]), again[0], _result(again[0]))
    assert _task_results(restarted, "held") == ['"paid"']


def _activity_id(server: EmulatorServer, token: str) -> int:
    with server.backend.transaction() as tx:
        for record in tx.ready_activities(HUB, 2**62, NameFilter(), 10):
            if record.lock_token == token:
                return record.id
    raise AssertionError(f"no activity leased under {token}")


def test_the_grace_is_no_longer_than_the_lease_it_keeps(tmp_path: Path) -> None:
    crashed = _leave_leases(tmp_path / "emulator.db", ManualClock(), lease_seconds=5)
    with EmulatorServer(
        port=0, db_path=str(crashed.db), clock=crashed.clock, lease_timeout=LEASE, restart_grace=GRACE
    ) as server:
        assert _offered(server) == []
        crashed.clock.advance(5)
        assert len(_offered(server)) == 1


def test_a_lease_that_had_expired_before_the_restart_is_offered_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    crashed = _leave_leases(tmp_path / "emulator.db", clock, lease_seconds=5)
    clock.advance(6)
    with EmulatorServer(port=0, db_path=str(crashed.db), clock=clock, restart_grace=GRACE) as server:
        assert len(_offered(server)) == 1
        with pytest.raises(FailedPreconditionError):
            server.dispatcher.complete_activity(HUB, _result(crashed.token))


def test_no_grace_offers_the_activity_again_at_once(tmp_path: Path) -> None:
    crashed = _leave_leases(tmp_path / "emulator.db", ManualClock())
    with EmulatorServer(port=0, db_path=str(crashed.db), clock=crashed.clock, restart_grace=0) as server:
        with pytest.raises(FailedPreconditionError):
            server.dispatcher.complete_activity(HUB, _result(crashed.token))
        assert len(_offered(server)) == 1


def test_a_kept_token_counts_only_in_its_own_task_hub(crashed: Crashed, restarted: EmulatorServer) -> None:
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.complete_activity("other", _result(crashed.token))
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.abandon(HUB, crashed.token, "orchestration")
    restarted.dispatcher.complete_activity(HUB, _result(crashed.token))
    assert _task_results(restarted, "held") == ['"paid"']


def test_an_abandoned_kept_lease_is_offered_again_at_once(crashed: Crashed, restarted: EmulatorServer) -> None:
    restarted.dispatcher.abandon(HUB, crashed.token, "activity")
    assert len(_offered(restarted)) == 1


def test_orchestration_turns_are_offered_again_at_once(crashed: Crashed, restarted: EmulatorServer) -> None:
    # A turn is replayed from its history, with nothing of it stored yet; its new events cannot be told from those
    # that arrived later, so its token cannot be honoured, and making it wait would gain nothing.
    expires = crashed.clock.now() + timedelta(seconds=LEASE)
    turns, _ = restarted.engine.lease_orchestrations(HUB, NameFilter(), ["d" * 32, "e" * 32], expires)
    assert {w.instance_id for w in turns} == {"held", "busy"}
    response = pb.OrchestratorResponse(instanceId="held", completionToken=crashed.orchestration_token)
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.complete_orchestration(HUB, response)


def _batch_result(token: str, answered: list[str], state: str = "2") -> pb.EntityBatchResult:
    done = pb.OperationResult(success=pb.OperationResultSuccess(result=sv("null")))
    return pb.EntityBatchResult(
        results=[done] * len(answered),
        entityState=sv(state),
        completionToken=token,
        operationInfos=[pb.OperationInfo(requestId=r) for r in answered],
    )


def _queued_requests(server: EmulatorServer) -> list[str]:
    with server.backend.transaction() as tx:
        queued = tx.entity_operations(HUB, ENTITY, 2**62, 10)
    return [pb.HistoryEvent.FromString(m.event).entityOperationSignaled.requestId for m in queued]


def _entity_offered(server: EmulatorServer) -> bool:
    expires = server.clock.now() + timedelta(seconds=LEASE)
    return server.entities.fetch(HUB, NameFilter(), server.dispatcher.leases.tokens(1)[0], expires) is not None


def test_an_entity_batch_result_delivered_within_the_grace_counts(crashed: Crashed, restarted: EmulatorServer) -> None:
    assert not _entity_offered(restarted)
    restarted.dispatcher.complete_entity(HUB, _batch_result(crashed.entity_token, ["r1", "r2"]))
    assert _queued_requests(restarted) == []
    view = restarted.entities.get(HUB, ENTITY)
    assert view is not None and view.record.state == "2"


def test_a_carried_batch_cut_short_leaves_the_rest_queued(crashed: Crashed, restarted: EmulatorServer) -> None:
    restarted.dispatcher.complete_entity(HUB, _batch_result(crashed.entity_token, ["r1"], state="1"))
    assert _queued_requests(restarted) == ["r2"]
    assert _entity_offered(restarted)  # the lease ended with the result: the rest is offered at once


def test_a_carried_batch_result_that_names_no_queued_operation_is_refused(
    crashed: Crashed, restarted: EmulatorServer
) -> None:
    for answered in ([], ["r1", "r9"]):
        result = _batch_result(crashed.entity_token, answered)
        if not answered:
            result.results.add().success.SetInParent()  # a result the operationInfos do not account for
        with pytest.raises(FailedPreconditionError, match="operationInfos"):
            restarted.dispatcher.complete_entity(HUB, result)
    assert _queued_requests(restarted) == ["r1", "r2"]
    assert not _entity_offered(restarted)
    crashed.clock.advance(GRACE)
    assert _entity_offered(restarted)
    with pytest.raises(FailedPreconditionError):
        restarted.dispatcher.complete_entity(HUB, _batch_result(crashed.entity_token, ["r1", "r2"]))
    assert _queued_requests(restarted) == ["r1", "r2"]


@pytest.mark.parametrize(("flags", "kept"), [((), True), (("--restart-grace", "0"), False)])
def test_the_command_line_passes_the_restart_grace_on(tmp_path: Path, flags: tuple[str, ...], kept: bool) -> None:
    crashed = _leave_leases(tmp_path / "emulator.db", ManualClock(datetime.now(timezone.utc)))
    args = build_parser().parse_args(["--db", str(crashed.db), "--port", "0", *flags])
    server = _server(args, (HUB,), None)
    try:
        assert (server.dispatcher.leases.find(crashed.token) is not None) is kept
    finally:
        server.close()


@pytest.mark.parametrize("flag", ["--restart-grace", "--stop-grace"])
@pytest.mark.parametrize("grace", ["-1", "nan", "86401"])
def test_the_command_line_refuses_a_grace_out_of_range(
    flag: str, grace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--in-memory", "--no-dashboard", flag, grace])
    assert exited.value.code == 2
    assert f"{flag} must be between 0 and 86400 seconds" in capsys.readouterr().err


@pytest.mark.parametrize("grace", [-1.0, float("nan"), 86_401.0])
def test_a_stop_grace_out_of_range_is_refused(grace: float) -> None:
    server = EmulatorServer(port=0, in_memory=True)
    with pytest.raises(ValueError, match="grace must be between 0 and 86400 seconds"):
        server.shutdown(grace)
    server.close()


def test_a_graceful_stop_leaves_a_leased_activity_leased_in_the_store_as_a_crash_does(tmp_path: Path) -> None:
    clock = ManualClock(datetime.now(timezone.utc))
    crashed = _leave_leases(tmp_path / "emulator.db", clock)
    first = EmulatorServer(port=0, db_path=str(crashed.db), clock=clock, lease_timeout=LEASE, restart_grace=GRACE)
    first.start()
    first.shutdown(grace=0)
    first.close()  # a later stop must not release what the graceful stop kept
    with EmulatorServer(port=0, db_path=str(crashed.db), clock=clock, restart_grace=GRACE) as again:
        # Kept for the restart grace, as after a kill -9: the old token's result still counts.
        assert again.dispatcher.leases.find(crashed.token) is not None
        assert _offered(again) == []
        again.dispatcher.complete_activity(HUB, _result(crashed.token))
        assert _task_results(again, "held") == ['"paid"']


@pytest.mark.parametrize("grace", [-1.0, float("nan"), 86_401.0])
def test_a_restart_grace_out_of_range_is_refused(grace: float) -> None:
    with pytest.raises(ValueError, match="restart_grace must be between 0 and 86400 seconds"):
        EmulatorServer(port=0, restart_grace=grace)


def test_the_store_keeps_only_live_activity_and_entity_leases_and_shortens_them(tmp_path: Path) -> None:
    backend = SqliteBackend(str(tmp_path / "store.db"))
    try:
        with backend.transaction() as tx:
            ids = [tx.add_activity(HUB, "i", n, "a", None, b"") for n in range(4)]
            for activity_id, (token, expires) in zip(
                ids, [("live", 100), ("short", 20), ("gone", 10), (None, None)], strict=True
            ):
                tx.lock_activity(activity_id, token, expires)
            tx.put_entity(EntityRecord(HUB, "@e@live", None, 0, lock_token="e-live", lock_expires=100))
            tx.put_entity(EntityRecord(HUB, "@e@gone", None, 0, lock_token="e-gone", lock_expires=5))
        kept = backend.release_all_leases(keep_until=50, now=10)
        assert [
            (r.id if isinstance(r, ActivityRecord) else r.instance_id, r.lock_token, r.lock_expires) for r in kept
        ] == [(ids[0], "live", 50), (ids[1], "short", 20), ("@e@live", "e-live", 50)]
        with backend.transaction() as tx:
            gone = tx.get_entity(HUB, "@e@gone")
            assert gone is not None and gone.lock_token is None
        with backend.transaction() as tx:
            stored = [tx.get_activity(i) for i in ids]
        assert [(r.lock_token, r.lock_expires) for r in stored if r is not None] == [
            ("live", 50),
            ("short", 20),
            (None, None),
            (None, None),
        ]
        assert backend.release_all_leases() == []
        with backend.transaction() as tx:
            assert all(r is not None and r.lock_token is None for r in map(tx.get_activity, ids))
    finally:
        backend.close()
