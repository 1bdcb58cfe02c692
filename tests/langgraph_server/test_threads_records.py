"""The thread record's operations (a pure function), and its keys."""

from __future__ import annotations

from durabletask.extensions.langgraph._records import KEEP_OPS, apply, record_key


def test_put_patch_run_and_delete() -> None:
    record = apply(None, "put", {"record": {"thread_id": "t", "metadata": {"a": 1}}, "op": "o1"})
    assert record == {"thread_id": "t", "metadata": {"a": 1}, "runs": {}, "ops": ["o1"]}
    record = apply(record, "patch", {"metadata": {"b": 2}, "updated_at": "later", "op": "o2"})
    assert record is not None and record["metadata"] == {"a": 1, "b": 2} and record["updated_at"] == "later"
    record = apply(record, "run", {"run": {"run_id": "r", "status": "pending"}, "metadata": {"graph_id": "g"}})
    assert record is not None and record["runs"]["r"]["status"] == "pending" and record["metadata"]["graph_id"] == "g"
    assert apply(record, "delete", {}) is None
    assert apply(None, "patch", {"metadata": {"x": 1}}) is None  # a patch never makes a thread


def test_an_ended_run_never_goes_back_to_running() -> None:
    record = apply(None, "put", {"record": {"thread_id": "t"}})
    record = apply(record, "run", {"run": {"run_id": "r", "status": "interrupted"}})
    record = apply(record, "run", {"run": {"run_id": "r", "status": "running", "updated_at": "x"}})
    assert record is not None and record["runs"]["r"] == {"run_id": "r", "status": "interrupted", "updated_at": "x"}


def test_operation_ids_are_bounded() -> None:
    record = apply(None, "put", {"record": {"thread_id": "t"}})
    for n in range(KEEP_OPS + 10):
        record = apply(record, "patch", {"op": f"o{n}"})
    assert record is not None and len(record["ops"]) == KEEP_OPS and record["ops"][-1] == f"o{KEEP_OPS + 9}"


def test_keys() -> None:
    assert record_key("plain-id") == "plain-id"
    hashed = {record_key(t) for t in ("a@b", "a~b", "用户", "x" * 200, "a\nb")}
    assert len(hashed) == 5 and all("~" in k and len(k) <= 80 for k in hashed)


def test_control_entity_keys_of_long_instance_ids_fit() -> None:
    from durabletask._replay.activity_control import CONTROL_ENTITY, MAX_ENTITY_KEY, entity_key

    short = entity_key("lg:chain:t1", "e" * 32)
    assert short == f"lg:chain:t1#{'e' * 32}"
    long_ids = [f"lg:held-under-a-long-graph-name:{n:036d}" for n in range(3)]
    keys = {entity_key(i, "e" * 32) for i in long_ids}
    assert len(keys) == 3 and all(len(f"@{CONTROL_ENTITY}@{k}") <= 100 and len(k) == MAX_ENTITY_KEY for k in keys)
    assert entity_key(long_ids[0], "e" * 32) != entity_key(long_ids[0], "f" * 32)


def test_the_stream_cursor_only_moves_forward_and_large_values_stay_out() -> None:
    from durabletask.extensions.langgraph._records import MAX_RECORD_VALUES, values_fields

    record = apply(None, "put", {"record": {"thread_id": "t"}})
    record = apply(record, "cursor", {"cursor": "000000000012-abcdef12"})
    record = apply(record, "cursor", {"cursor": "000000000007-abcdef12"})
    assert record is not None and record["stream_cursor"] == "000000000012-abcdef12"
    assert apply(None, "cursor", {"cursor": "000000000001-abcdef12"}) is None  # a deleted thread stays deleted
    assert apply(None, "run", {"run": {"run_id": "r", "status": "success"}}) is None
    small = values_fields({"t": "msgpack", "b": "x" * 10}, {"t": "msgpack", "b": "y"})
    assert small["values"]["b"] == "x" * 10 and small["values_elsewhere"] is False
    large = values_fields({"t": "msgpack", "b": "x" * MAX_RECORD_VALUES}, {"t": "msgpack", "b": "y"})
    assert large == {"values": None, "interrupts": None, "values_elsewhere": True}


def test_a_second_put_is_refused_and_changes_nothing() -> None:
    record = apply(None, "put", {"record": {"thread_id": "t", "metadata": {"first": 1}}, "op": "a"})
    for n in range(KEEP_OPS + 5):
        record = apply(record, "put", {"record": {"thread_id": "t", "metadata": {"second": 1}}, "op": f"b{n}"})
    assert record is not None and record["metadata"] == {"first": 1} and record["ops"] == ["a"]
    assert f"b{KEEP_OPS + 4}" in record["refused"] and len(record["refused"]) == KEEP_OPS
