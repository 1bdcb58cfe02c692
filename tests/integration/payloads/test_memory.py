"""What keeps a large payload in memory longer, or in more copies, than it needs to be: checked on the objects
themselves (what a kept session still references, what the helpers allocate), not on timings."""

from __future__ import annotations

import gc
import tracemalloc
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions, externalize_payloads
from tests.unit.replay.history import History, registry

MIB = 1024 * 1024


def relay(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("payload")
    result = yield ctx.call_activity("same", input=value)
    return len(result)


def _is_globals(obj: Any) -> bool:
    return isinstance(obj, dict) and "__builtins__" in obj and "__name__" in obj


def reachable(root: Any, limit: int = 100_000) -> list[Any]:
    """Every object reachable from ``root`` by references (code, classes and modules excluded)."""
    seen: set[int] = set()
    found: list[Any] = []
    pending = [root]
    while pending and len(seen) < limit:
        obj = pending.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)) or _is_globals(obj):
            continue  # the registered code and what its module holds are not the orchestration's state
        seen.add(id(obj))
        found.append(obj)
        if not isinstance(obj, Message):  # a message's own fields are not Python references
            pending.extend(gc.get_referents(obj))
    return found


def test_a_kept_orchestration_holds_neither_its_work_item_nor_a_sent_payload() -> None:
    executor = OrchestrationExecutor(registry(relay), payload_limit=10 * MIB)  # as with a payload store
    executor.execute("m", [], History("m").new().started("relay").new_events)
    big = "x" * (2 * MIB)
    step = executor.resume(History("m").new().orchestrator_started().event_raised("payload", big).new_events)
    [scheduled] = step.actions
    assert len(scheduled.scheduleTask.input.value) == len(big) + 2
    del step, scheduled
    kept = reachable(executor)
    # A protobuf message reachable from the executor (even a small one, such as an event's timestamp) keeps
    # its whole work item alive, restored payloads included.
    assert [type(m).__name__ for m in kept if isinstance(m, Message)] == []
    # The sent activity call is kept to be matched with its history event, not its 2 MiB input.
    large = [s for s in kept if isinstance(s, str) and len(s) > MIB]
    assert large == [big], [len(s) for s in large]  # only the orchestration's own variable


class CountingStore(FilePayloadStore):
    """Keeps nothing: records the size of what it was given."""

    def upload(self, data: Any, *, instance_id: str | None = None) -> str:
        self.sizes = [*getattr(self, "sizes", []), len(data)]
        return "blob:v1:durabletask-payloads:counted"


def test_storing_a_payload_makes_one_copy_of_its_text(tmp_path: Path) -> None:
    store = CountingStore(FilePayloadStoreOptions(directory=tmp_path, enable_compression=False))
    response = pb.ActivityResponse(instanceId="m", taskId=1)
    response.result.value = "r" * (8 * MIB)
    tracemalloc.start()
    try:
        externalize_payloads(response, store)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.result.value == "blob:v1:durabletask-payloads:counted" and store.sizes == [8 * MIB]
    # Reading the text out as str and encoding it made two copies at once (16 MiB); its bytes are one.
    assert peak < 1.5 * 8 * MIB, peak


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_worker_result_is_stored_after_garbage_cycles_are_freed(tmp_path: Path) -> None:
    import weakref

    from durabletask._grpc.large_payloads import PayloadBoundary, PayloadStub

    seen: list[bool] = []

    class Store(FilePayloadStore):
        def upload(self, data: Any, *, instance_id: str | None = None) -> str:
            seen.append(leftover() is None)
            return super().upload(data, instance_id=instance_id)

    class Sidecar:
        def CompleteActivityTask(self, request: Any, **_: Any) -> str:
            return "sent"

    stub = PayloadStub(Sidecar(), PayloadBoundary(Store(tmp_path)), "m")
    response = pb.ActivityResponse(instanceId="m", taskId=1)
    response.result.value = "r" * (300 * 1024)
    gc.disable()  # so only the worker's own collection can free the cycle
    try:
        leftover = weakref.ref(Cycle())  # what a finished replay leaves: unreachable, in a reference cycle
        assert leftover() is not None
        assert stub.CompleteActivityTask(response) == "sent"
    finally:
        gc.enable()
    assert seen == [True] and response.result.value.startswith("blob:v1:")


def retried(ctx: task.OrchestrationContext, value: str) -> Any:
    policy = task.RetryPolicy(first_retry_interval=timedelta(seconds=1), max_number_of_attempts=2)
    result = yield ctx.call_activity("flaky", input=value, retry_policy=policy)
    return result


def test_a_call_that_may_be_retried_keeps_its_payload_for_the_retry() -> None:
    executor = OrchestrationExecutor(registry(retried), payload_limit=10 * MIB)
    big = "y" * (2 * MIB)
    first = executor.execute("r", [], History("r").new().started("retried", big).new_events)
    [attempt] = first.actions
    failed = History("r").new().orchestrator_started().task_failed(1).new_events
    [timer] = executor.resume(failed).actions
    fired = History("r").new().orchestrator_started().timer_fired(2, timer.createTimer.fireAt.ToDatetime()).new_events
    [again] = executor.resume(fired).actions
    assert again.scheduleTask.input.value == attempt.scheduleTask.input.value == f'"{big}"'


class Box:
    """A payload value that can be watched with a weak reference."""

    def __init__(self, text: str) -> None:
        self.text = text


class BoxConverter:
    def serialize(self, value: Any) -> str | None:
        return None if value is None else value.text

    def deserialize(self, data: str | None, target_type: Any = None) -> Any:
        return None if data is None else Box(data)

    def coerce(self, value: Any, target_type: Any = None) -> Any:
        return value


def echo_box(ctx: Any, value: Box) -> Box:
    return value


def test_an_activity_lets_go_of_its_input_and_output_before_its_response_is_built(
    monkeypatch: Any,
) -> None:
    import logging
    import weakref

    from durabletask._registry import Registry
    from durabletask._worker.activity_runner import ActivityRunner
    from durabletask.serialization import DataConverter

    converter = type("Converter", (BoxConverter, DataConverter), {})()
    registry = Registry()
    registry.add_activity(echo_box)
    runner = ActivityRunner(registry, logger=logging.getLogger("test"), data_converter=converter)
    watched: list[Any] = []
    deserialize = converter.deserialize

    def watch(data: str | None, target_type: Any = None) -> Any:
        value = deserialize(data, target_type)
        watched.append(weakref.ref(value))
        return value

    monkeypatch.setattr(converter, "deserialize", watch)
    alive_when_built: list[bool] = []
    success = ActivityRunner._success

    def checking(self: Any, *args: Any) -> Any:
        alive_when_built.append(watched[0]() is not None)
        return success(self, *args)

    monkeypatch.setattr(ActivityRunner, "_success", checking)
    request = pb.ActivityRequest(name="echo_box", orchestrationInstance=pb.OrchestrationInstance(instanceId="m"))
    request.input.value = "large input"
    response = runner.run(request, "token")
    assert response.result.value == "large input"
    # The value (input and result alike) is gone while its text is copied into the response and sent.
    assert alive_when_built == [False]


def test_an_orchestration_turn_stores_its_actions_payloads_before_building_the_response(tmp_path: Path) -> None:
    import logging

    from durabletask._grpc.large_payloads import PayloadBoundary
    from durabletask._worker.orchestration_runner import OrchestrationRunner
    from durabletask._worker.registry import WorkerRegistry

    registry = WorkerRegistry()
    registry.add_orchestrator(relay)
    log = logging.getLogger("test")
    seen: list[int] = []
    boundary = PayloadBoundary(FilePayloadStore(tmp_path))

    def store_payloads(action: pb.OrchestratorAction, instance_id: str) -> None:
        seen.append(len(action.scheduleTask.input.value))  # the action as the replay built it
        boundary.result(action, instance_id)

    runner = OrchestrationRunner(
        registry,
        lambda: OrchestrationExecutor(registry, logger=log, payload_limit=10 * MIB),
        logger=log,
        store_payloads=store_payloads,
    )
    events = History("m").new().started("relay").orchestrator_started().event_raised("payload", "e" * MIB)
    outcome = runner.run(pb.OrchestratorRequest(instanceId="m", newEvents=events.new_events), "token")
    assert outcome.response is not None and seen == [MIB + 2]
    # What goes into the response (a copy) is the token, not the megabyte.
    assert outcome.response.actions[0].scheduleTask.input.value.startswith("blob:v1:durabletask-payloads:m/")

    def failing(action: pb.OrchestratorAction, instance_id: str) -> None:
        raise ConnectionError("the store is down")

    runner = OrchestrationRunner(
        registry,
        lambda: OrchestrationExecutor(registry, logger=log, payload_limit=10 * MIB),
        logger=log,
        store_payloads=failing,
    )
    outcome = runner.run(pb.OrchestratorRequest(instanceId="m", newEvents=events.new_events), "token")
    # Handed back, to be tried again, rather than sent with the payload inline or lost.
    assert outcome.response is None and "the store is down" in outcome.reason


def test_compressing_a_payload_to_the_store_holds_no_whole_copy_of_its_gzip(tmp_path: Path) -> None:
    import base64
    import gzip
    import random

    from durabletask.payload.store import pack

    store = FilePayloadStore(tmp_path)  # compression on, as by default
    data = base64.b64encode(random.Random(3).randbytes(6 * MIB))  # 8 MiB that gzip shrinks by a quarter only
    tracemalloc.start()
    try:
        token = store.upload(data, instance_id="m")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # gzip.compress joined its blocks into one output and then added header and trailer: about 3 copies of
    # the 6 MiB of gzip at once. Written to the file in pieces, only a piece is held at a time.
    assert peak < 2 * MIB, peak
    assert store.download(token) == data
    stored = pack(data, True)
    assert stored[:2] == b"\x1f\x8b" and gzip.decompress(stored) == data


def test_fetching_a_compressed_payload_holds_it_once(tmp_path: Path) -> None:
    import base64
    import random

    from durabletask.payload.store import pack, unpack

    store = FilePayloadStore(tmp_path)
    data = base64.b64encode(random.Random(4).randbytes(6 * MIB))  # 8 MiB, about 6 MiB gzipped
    token = store.upload(data, instance_id="m")
    stored = pack(data, True)
    for fetch in (lambda: store.download(token), lambda: unpack(stored)):
        tracemalloc.start()
        try:
            fetched = fetch()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert fetched == data
        del fetched
        # gzip.decompress copied the gzip, then joined the payload's blocks: about 28 MiB at once for these
        # 8 MiB. Gunzipped in pieces into one buffer: the payload, and a little over while the buffer grows.
        assert peak < 1.5 * 8 * MIB, peak


def _texts_on_the_stack(length: int) -> list[str]:
    """The names of the locals, in every frame below the caller, holding a str of ``length`` characters."""
    import sys

    found = []
    frame = sys._getframe(2)
    while frame is not None:
        found += [
            f"{frame.f_code.co_name}.{k}" for k, v in frame.f_locals.items() if isinstance(v, str) and len(v) == length
        ]
        frame = frame.f_back
    return found


def test_an_event_s_text_is_let_go_once_decoded_before_the_orchestration_runs_on() -> None:
    big = "e" * (2 * MIB)
    seen: list[list[str]] = []

    def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
        value = yield ctx.wait_for_external_event("payload")
        seen.append(_texts_on_the_stack(len(big) + 2))  # the JSON text: the value and its quotes
        return len(value)

    executor = OrchestrationExecutor(registry(waits), payload_limit=10 * MIB)
    executor.execute("w", [], History("w").new().started("waits").new_events)
    executor.resume(History("w").new().orchestrator_started().event_raised("payload", big).new_events)
    # While the orchestration runs on (encoding what it sends next), its decoded value is one copy; the event's
    # text kept by the handler that decoded it was a second.
    assert seen == [[]]


def test_checking_a_payload_s_size_makes_no_encoded_copy_of_it() -> None:
    import pytest

    from durabletask import _json_codec
    from durabletask._errors import PayloadTooLargeError

    text = "a" * (8 * MIB)
    tracemalloc.start()
    try:
        _json_codec.check_size("input", text, limit=9 * MIB)  # 4 bytes per character could be over: it is measured
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MIB, peak  # text.encode() made an 8 MiB copy just to take its length
    wide = "é" * (5 * MIB)  # 10 MiB of UTF-8
    with pytest.raises(PayloadTooLargeError, match=str(10 * MIB)):
        _json_codec.check_size("input", wide, limit=9 * MIB)
    _json_codec.check_size("input", wide, limit=10 * MIB)
    assert _json_codec.utf8_size("aé€😀" * 100_000) == 10 * 100_000


_UPLOAD_PEAK = """
import sys
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions, externalize_payloads

class Store(FilePayloadStore):
    def upload(self, data, *, instance_id=None):
        self.size = len(data)
        return "blob:v1:durabletask-payloads:counted"

def peak():  # the process's resident high-water mark since it was last reset
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

store = Store(FilePayloadStoreOptions(directory=sys.argv[1], max_stored_payload_bytes=128 << 20))
response = pb.ActivityResponse(instanceId="m", taskId=1)
response.result.value = b"r" * (64 << 20)
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")  # the high-water mark starts again from what is resident now: the message's copy
before = peak()
externalize_payloads(response, store)
print((peak() - before) / (64 << 20))
"""


def test_storing_a_payload_serializes_no_copy_of_its_message(tmp_path: Path) -> None:
    import subprocess
    import sys

    # Memory that protobuf allocates (its serialization buffer) is not seen by tracemalloc: the process's own
    # high-water mark is, in a process of its own.
    done = subprocess.run(
        [sys.executable, "-c", _UPLOAD_PEAK, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    # Serializing the wrapper built its encoding and then copied it out: two copies at once, where the store
    # is handed the text alone (one).
    assert float(done.stdout) < 1.5, done.stdout


def test_the_blob_store_uploads_without_its_whole_gzip_in_memory(blob_store: Any) -> None:
    import base64
    import random

    data = base64.b64encode(random.Random(5).randbytes(18 * MIB))  # 24 MiB, about 18 MiB gzipped
    blob_store.upload(b"warm up: the container and the connection")
    tracemalloc.start()
    try:
        token = blob_store.upload(data, instance_id="m")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The gzip was built in memory and handed to the storage client whole (18 MiB and more); now it is spooled
    # to a file and sent a 4 MiB block at a time (a block and the request's copy of it).
    assert peak < 12 * MIB, peak
    assert blob_store.download(token) == data


def test_the_blob_store_fetches_a_payload_without_its_whole_gzip_in_memory(blob_store: Any) -> None:
    import base64
    import random

    data = base64.b64encode(random.Random(6).randbytes(18 * MIB))  # 24 MiB, about 18 MiB gzipped
    token = blob_store.upload(data, instance_id="m")
    blob_store.download(blob_store.upload(b"warm up"))
    tracemalloc.start()
    try:
        fetched = blob_store.download(token)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fetched == data
    # readall() fetched the blob in one 32 MiB request and held the gzip beside the payload (about 7x the
    # payload at once under tracemalloc); now blocks of 4 MiB go to a file, gunzipped from there into one buffer.
    assert peak < 2 * 24 * MIB, peak
