"""One contract for the storage seam, run against a persistent file database and an in-memory one."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtscale_emulator.storage import Backend, InstanceQueryArgs, InstanceRecord, NameFilter, SqliteBackend

PENDING, RUNNING, COMPLETED = 6, 0, 1
ANY = NameFilter()


@pytest.fixture(params=["file", "memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteBackend]:
    store = SqliteBackend(str(tmp_path / "store.db") if request.param == "file" else None)
    yield store
    store.close()


def _instance(iid: str, hub: str = "h", status: int = RUNNING, created: int = 1, **kw: object) -> InstanceRecord:
    return InstanceRecord(
        hub=hub,
        instance_id=iid,
        execution_id="e",
        name="Orch",
        status=status,
        created_at=created,
        updated_at=created,
        **kw,
    )  # type: ignore[arg-type]


def test_hubs(backend: Backend) -> None:
    with backend.transaction() as tx:
        assert not tx.hub_exists("h")
        tx.ensure_hub("h")
        tx.ensure_hub("h")
        assert tx.hub_exists("h")
        tx.delete_hub("h")
        assert not tx.hub_exists("h")


def test_instance_round_trip(backend: Backend) -> None:
    record = _instance("a", input="in", tags={"t": "1"}, failure=b"\x01", parent_instance_id="p", parent_task_id=3)
    with backend.transaction() as tx:
        tx.put_instance(record)
    with backend.transaction() as tx:
        assert tx.get_instance("h", "a") == record
        assert tx.get_instance("other", "a") is None
        assert tx.child_ids("h", "p") == ["a"]


def test_failed_transaction_rolls_back(backend: Backend) -> None:
    with pytest.raises(RuntimeError), backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        raise RuntimeError("boom")
    with backend.transaction() as tx:
        assert tx.get_instance("h", "a") is None


def test_a_history_belongs_to_a_stored_instance(backend: Backend) -> None:
    # Histories are keyed by their instance's row: there is nothing to append to before it exists.
    with pytest.raises(LookupError, match="no instance 'a'"), backend.transaction() as tx:
        tx.append_history("h", "a", [b"1"])
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        tx.put_instance(_instance("a", hub="other"))
        tx.append_history("h", "a", [b"1"])
        tx.append_history("other", "a", [b"2", b"3"])
        assert tx.history("h", "a") == [b"1"] and tx.history("other", "a") == [b"2", b"3"]
        tx.delete_instance("h", "a")
        tx.put_instance(_instance("a"))  # a new instance under the same ID starts with no history
        assert tx.history("h", "a") == [] and tx.history("other", "a") == [b"2", b"3"]


def test_history_appends_in_order(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        tx.append_history("h", "a", [b"1", b"2"])
        tx.append_history("h", "a", [b"3"])
        assert tx.history("h", "a") == [b"1", b"2", b"3"]
        tx.clear_history("h", "a")
        assert tx.history("h", "a") == []


def test_history_appends_after_a_known_length_and_refuses_a_taken_one(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        tx.append_history("h", "a", [b"1", b"2"])
        tx.append_history("h", "a", [b"3"], 2)
        assert tx.history("h", "a") == [b"1", b"2", b"3"]
        assert tx.history_length("h", "a") == 3
    with pytest.raises(sqlite3.IntegrityError), backend.transaction() as tx:
        tx.append_history("h", "a", [b"x"], 1)
    with backend.transaction() as tx:
        assert tx.history("h", "a") == [b"1", b"2", b"3"]


def test_a_row_read_and_written_in_one_transaction_keeps_what_others_wrote(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
    with backend.transaction() as tx:
        record = tx.get_instance("h", "a")
        assert record is not None
        tx.lock_instance("h", "a", "tok", 99)
        record.custom_status = "busy"
        tx.put_instance(record)  # written in full: the lock change above is not what it read
        again = tx.get_instance("h", "a")
        assert again is not None and again.lock_token is None and again.custom_status == "busy"
        again.status = COMPLETED
        tx.put_instance(again)  # only the status changed
        tx.put_instance(again)  # nothing changed
    with backend.transaction() as tx:
        stored = tx.get_instance("h", "a")
        assert stored is not None
        assert (stored.status, stored.custom_status, stored.lock_token) == (COMPLETED, "busy", None)


def test_messages_become_visible_and_make_instances_ready(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        tx.put_instance(_instance("b"))
        first = tx.add_message("h", "a", b"now", 10)
        tx.add_message("h", "b", b"later", 50)
        assert [m.event for m in tx.visible_messages("h", "a", 10)] == [b"now"]
        assert tx.ready_instances("h", 10, ANY, 10)[0] == [("a", "Orch", None)]
        assert tx.ready_instances("h", 10, NameFilter({"Other": frozenset()}), 10)[0] == []
        assert tx.next_message_time("h", 10) == 50
        tx.lock_instance("h", "a", "tok", 100)
        assert tx.ready_instances("h", 60, ANY, 10)[0] == [("b", "Orch", None)]
        # An expired lease makes the instance available again.
        assert [r[0] for r in tx.ready_instances("h", 100, ANY, 10)[0]] == ["a", "b"]
        assert tx.next_lease_expiry("h") == 100
        # Expired leases are not "due" any more: a waiting stream must not spin on them.
        assert tx.next_lease_expiry("h", 100) is None
        tx.delete_messages([first])
        assert tx.visible_messages("h", "a", 100) == []


def test_activity_queue_leases(backend: Backend) -> None:
    with backend.transaction() as tx:
        one = tx.add_activity("h", "a", 1, "Act", None, b"req1")
        two = tx.add_activity("h", "a", 2, "Other", "v", b"req2")
        assert [r.id for r in tx.ready_activities("h", 0, ANY, 10)] == [one, two]
        assert [r.id for r in tx.ready_activities("h", 0, NameFilter({"Other": frozenset()}), 10)] == [two]
        tx.lock_activity(one, "tok", 5)
        assert [r.id for r in tx.ready_activities("h", 0, ANY, 10)] == [two]
        got = tx.get_activity(one)
        assert got is not None and got.lock_token == "tok" and got.request == b"req1"
        tx.delete_activity(one)
        assert tx.get_activity(one) is None


def test_queries_filter_and_page(backend: Backend) -> None:
    with backend.transaction() as tx:
        for i in range(5):
            tx.put_instance(
                _instance(
                    f"job-{i}", status=COMPLETED if i % 2 else RUNNING, created=i, completed_at=i if i % 2 else None
                )
            )
        tx.put_instance(_instance("other_1"))
        tx.put_instance(_instance("job-x", hub="elsewhere"))
    with backend.transaction() as tx:
        ids = [r.instance_id for r in tx.query_instances("h", InstanceQueryArgs(id_prefix="job-", limit=3))]
        assert ids == ["job-0", "job-1", "job-2"]
        after = tx.query_instances("h", InstanceQueryArgs(id_prefix="job-", after_id="job-2"))
        assert [r.instance_id for r in after] == ["job-3", "job-4"]
        done = tx.query_instances("h", InstanceQueryArgs(terminal_only=True))
        assert [r.instance_id for r in done] == ["job-1", "job-3"]
        created = tx.query_instances("h", InstanceQueryArgs(created_from=2, created_to=4, id_prefix="job"))
        assert [r.instance_id for r in created] == ["job-2", "job-3"]
        # GLOB wildcards in a prefix are literal.
        assert tx.query_instances("h", InstanceQueryArgs(id_prefix="other_")) != []
        assert tx.query_instances("h", InstanceQueryArgs(id_prefix="job*")) == []


def test_delete_instance_removes_everything_it_owns(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a"))
        tx.append_history("h", "a", [b"x"])
        tx.add_message("h", "a", b"m", 0)
        activity = tx.add_activity("h", "a", 1, "Act", None, b"r")
        tx.delete_instance("h", "a")
        assert tx.get_instance("h", "a") is None and tx.history("h", "a") == []
        assert tx.visible_messages("h", "a", 10) == [] and tx.get_activity(activity) is None


def test_release_all_leases_and_reset(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.put_instance(_instance("a", lock_token="t", lock_expires=9))
        tx.ensure_hub("h")
    backend.release_all_leases()
    with backend.transaction() as tx:
        record = tx.get_instance("h", "a")
        assert record is not None and record.lock_token is None
    backend.reset()
    with backend.transaction() as tx:
        assert tx.get_instance("h", "a") is None and tx.hub_exists("h")


def test_file_database_survives_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "durable.db")
    first = SqliteBackend(path)
    with first.transaction() as tx:
        tx.put_instance(_instance("kept"))
        tx.append_history("h", "kept", [b"e"])
    first.close()
    second = SqliteBackend(path)
    with second.transaction() as tx:
        assert tx.get_instance("h", "kept") is not None and tx.history("h", "kept") == [b"e"]
    second.close()


def test_entities_locks_and_lock_requests(backend: Backend) -> None:
    from dtscale_emulator.storage import EntityQueryArgs, EntityRecord

    with backend.transaction() as tx:
        tx.put_entity(EntityRecord("h", "@c@1", "5", 10))
        tx.put_entity(EntityRecord("h", "@c@2", None, 20, locked_by="cs", lock_owner="orch"))
        tx.add_message("h", "@c@1", b"op", 0)
        assert tx.get_entity("h", "@c@1") == EntityRecord("h", "@c@1", "5", 10)
        assert [e.instance_id for e in tx.ready_entities("h", 5, 10)] == ["@c@1"]
        tx.lock_entity("h", "@c@1", "tok", 50)
        assert tx.ready_entities("h", 5, 10) == [] and tx.backlog("h", "@c@1") == 1
        assert tx.next_lease_expiry("h") == 50
        stateful = tx.query_entities("h", EntityQueryArgs(id_prefix="@c@"))
        assert [e.instance_id for e in stateful] == ["@c@1"]
        everything = tx.query_entities("h", EntityQueryArgs(include_transient=True, modified_from=15))
        assert [e.instance_id for e in everything] == ["@c@2"]
        tx.add_lock_request("h", "cs2", "other", ["@c@2", "@c@3"])
        (request,) = tx.lock_requests("h")
        assert (request.critical_section_id, request.owner, request.lock_set) == ("cs2", "other", ["@c@2", "@c@3"])
        tx.put_entity(EntityRecord("h", "@c@4", "7", 20, locked_by="cs", lock_owner="orch"))
        assert tx.release_locks_of("h", "orch") == 2
        released = tx.get_entity("h", "@c@4")
        assert released is not None and released.locked_by is None
        assert tx.get_entity("h", "@c@2") is None  # no state, no lock, nothing queued: it does not exist
        tx.delete_lock_request(request.id)
        assert tx.lock_requests("h") == []
        tx.delete_entity("h", "@c@1")
        assert tx.get_entity("h", "@c@1") is None


def test_ready_entities_filter_by_name_case_insensitively(backend: Backend) -> None:
    from dtscale_emulator.storage import EntityRecord

    with backend.transaction() as tx:
        for entity_id in ("@Counter@1", "@other@1", "@count@2"):
            tx.put_entity(EntityRecord("h", entity_id, None, 0))
            tx.add_message("h", entity_id, b"op", 0)
        assert [e.instance_id for e in tx.ready_entities("h", 0, 10, ["counter"])] == ["@Counter@1"]
        assert tx.ready_entities("h", 0, 10, []) == []
        assert len(tx.ready_entities("h", 0, 10)) == 3


def test_only_entities_with_nothing_left_are_dropped(backend: Backend) -> None:
    from dtscale_emulator.storage import EntityRecord

    with backend.transaction() as tx:
        tx.put_entity(EntityRecord("h", "@c@empty", None, 1))
        tx.put_entity(EntityRecord("h", "@c@state", "1", 1))
        tx.put_entity(EntityRecord("h", "@c@locked", None, 1, locked_by="cs", lock_owner="o"))
        tx.put_entity(EntityRecord("h", "@c@leased", None, 1, lock_token="t", lock_expires=5))
        tx.put_entity(EntityRecord("h", "@c@queued", None, 1))
        tx.add_message("h", "@c@queued", b"op", 0)
        dropped = {e: tx.drop_entity_if_empty("h", e) for e in ("@c@empty", "@c@state", "@c@locked", "@c@leased")}
        dropped["@c@queued"] = tx.drop_entity_if_empty("h", "@c@queued")
        assert dropped == {
            "@c@empty": True,
            "@c@state": False,
            "@c@locked": False,
            "@c@leased": False,
            "@c@queued": False,
        }
        assert tx.get_entity("h", "@c@empty") is None


def test_hub_rows_are_deleted_in_chunks(backend: Backend) -> None:
    with backend.transaction() as tx:
        tx.ensure_hub("h")
        tx.ensure_hub("other")
        for i in range(30):
            tx.put_instance(_instance(f"i{i}"))
            tx.append_history("h", f"i{i}", [b"a", b"b"])
            tx.add_message("h", f"i{i}", b"m", 0)
        tx.put_instance(_instance("kept", hub="other"))
        assert tx.hub_count() == 2
    chunks = []
    while True:
        with backend.transaction() as tx:
            chunks.append(tx.delete_hub_rows("h", 8))
        if chunks[-1] == 0:
            break
    assert len(chunks) > 5 and max(chunks) <= 8 and sum(chunks) == 30 + 60 + 30
    with backend.transaction() as tx:
        assert tx.hub_exists("h") and tx.history("h", "i0") == [] and tx.get_instance("h", "i1") is None
        assert tx.get_instance("other", "kept") is not None


def test_a_locked_entity_is_ready_only_for_its_owners_calls(backend: Backend) -> None:
    from dtscale_emulator.storage import EntityRecord

    with backend.transaction() as tx:
        tx.put_entity(EntityRecord("h", "@c@locked", None, 0, locked_by="cs", lock_owner="orch"))
        tx.put_entity(EntityRecord("h", "@c@free", None, 0))
        signals = [tx.add_entity_operation("h", "@c@locked", f"s{n}".encode(), 0, None) for n in range(300)]
        tx.add_entity_operation("h", "@c@free", b"f", 1, None)
        # The locked entity's signals wait for the unlock and do not hide the free entity behind them.
        assert [e.instance_id for e in tx.ready_entities("h", 5, 1)] == ["@c@free"]
        call = tx.add_entity_operation("h", "@c@locked", b"call", 2, "orch")
        tx.add_entity_operation("h", "@c@locked", b"other", 2, "someone-else")
        assert [e.instance_id for e in tx.ready_entities("h", 5, 2)] == ["@c@free", "@c@locked"]
        assert [m.id for m in tx.entity_operations("h", "@c@locked", 5, 10, "orch")] == [call]
        # Unlocked, an entity runs its operations oldest first, at most a batch at a time.
        assert [m.id for m in tx.entity_operations("h", "@c@locked", 5, 3)] == signals[:3]
        assert tx.entity_operations("h", "@c@free", 0, 10) == []  # not visible yet


def test_a_database_from_before_entity_callers_is_upgraded(tmp_path: Path) -> None:
    from dtscale_emulator.protocol import pb
    from dtscale_emulator.storage import EntityRecord

    path = str(tmp_path / "old.db")
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, hub TEXT NOT NULL, "
        "instance_id TEXT NOT NULL, event BLOB NOT NULL, visible_at INTEGER NOT NULL)"
    )
    called = pb.HistoryEvent(entityOperationCalled=pb.EntityOperationCalledEvent(requestId="r", operation="op"))
    called.entityOperationCalled.parentInstanceId.value = "orch"
    signaled = pb.HistoryEvent(entityOperationSignaled=pb.EntityOperationSignaledEvent(requestId="s"))
    for event in (signaled, called):
        old.execute(
            "INSERT INTO messages (hub, instance_id, event, visible_at) VALUES ('h', '@c@1', ?, 0)",
            (event.SerializeToString(),),
        )
    old.commit()
    old.close()
    store = SqliteBackend(path)
    with store.transaction() as tx:
        tx.put_entity(EntityRecord("h", "@c@1", None, 0, locked_by="cs", lock_owner="orch"))
        (ready,) = tx.entity_operations("h", "@c@1", 0, 10, "orch")
        assert pb.HistoryEvent.FromString(ready.event).entityOperationCalled.requestId == "r"
        assert [e.instance_id for e in tx.ready_entities("h", 0, 10)] == ["@c@1"]
    store.close()


def test_versions_are_matched_before_the_page_is_cut(backend: Backend) -> None:
    with backend.transaction() as tx:
        for n in range(50):
            tx.put_instance(_instance(f"old{n}", version="1"))
            tx.add_message("h", f"old{n}", b"m", n)
            tx.add_activity("h", f"old{n}", 1, "Act", "1", b"r")
        tx.put_instance(_instance("new", version="2"))
        tx.add_message("h", "new", b"m", 100)
        newest = tx.add_activity("h", "new", 1, "Act", "2", b"r")
        unversioned = tx.add_activity("h", "new", 2, "Act", None, b"r")
        v2 = NameFilter({"Orch": frozenset({"2"}), "Act": frozenset({"2"})})
        assert tx.ready_instances("h", 100, v2, 1) == ([("new", "Orch", "2")], True)
        assert [r.id for r in tx.ready_activities("h", 100, v2, 1)] == [newest]
        # An empty version matches a filter listing "" (as NameFilter.accepts does).
        blank = NameFilter({"Act": frozenset({""})})
        assert [r.id for r in tx.ready_activities("h", 100, blank, 5)] == [unversioned]
        assert tx.ready_activities("h", 100, NameFilter({}), 5) == []
