"""A worker with a payload store: orchestration and activity payloads stay out of their work items (which keep
the tokens) and are handed to the runner as each is decoded; measured on the process's own memory."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from durabletask import task
from durabletask._grpc.large_payloads import FetchedPayloads, PayloadBoundary
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._worker.large_payloads import PayloadWorkItems
from durabletask.payload import FilePayloadStore
from tests.unit.replay.history import History, registry

ROOT = Path(__file__).resolve().parents[3]

# An activity work item whose input is a 48 MiB token goes through the worker's payload wrapper, the activity
# runner (an echo) and the stub that stores the result: the growth of the resident high-water mark, as a
# multiple of the payload. Protobuf's memory is invisible to tracemalloc, hence a process of its own.
_ACTIVITY_PEAK = """
import logging, sys
from durabletask._grpc.large_payloads import FetchedPayloads, PayloadBoundary
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.activity_runner import ActivityRunner
from durabletask._worker.large_payloads import PayloadWorkItems
from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions

SIZE = 48 << 20

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

def same(ctx, value):
    return value

store = FilePayloadStore(
    FilePayloadStoreOptions(directory=sys.argv[1], max_stored_payload_bytes=128 << 20, enable_compression=False)
)
token = store.upload('"' + "p" * SIZE + '"', instance_id="m")
activities = Registry()
activities.add_activity(same)
fetched = FetchedPayloads(store)
runner = ActivityRunner(activities, logger=logging.getLogger(), payload_limit=128 << 20, payloads=fetched)
sent = []

class Sidecar:
    def CompleteActivityTask(self, response):
        sent.append(response.result.value)

def handler(item, stub, done):
    stub.CompleteActivityTask(runner.run(item.activityRequest, item.completionToken))
    done()

items = PayloadWorkItems(
    handler, PayloadBoundary(store), logging.getLogger(), fetched=fetched, fetched_kinds=frozenset({"activityRequest"})
)
request = pb.ActivityRequest(name="same", taskId=1, orchestrationInstance=pb.OrchestrationInstance(instanceId="m"))
request.input.value = token
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")  # the high-water mark starts again from what is resident now
before = peak()
items(pb.WorkItem(activityRequest=request, completionToken="ct"), Sidecar(), lambda: None)
items.close()
grown = (peak() - before) / SIZE
assert sent[0].startswith("blob:v1:") and store.download(sent[0]) == store.download(token)
print(grown)
"""


def test_an_activity_s_large_input_and_result_are_held_at_most_twice_at_once(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ACTIVITY_PEAK, str(tmp_path)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    # Restored into the work item, the input stayed in protobuf's memory through the whole item, beside the text
    # read out of it and the decoded value: 3x. Taken when decoded: the text and the value, then the value and
    # its encoding, then the response's copy and the text read out for the store: 2x.
    assert float(done.stdout) < 2.5, done.stdout


_HOLDS_TOKENS_PEAK = """
import sys
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.payload import FilePayloadStore
from durabletask.payload.helpers import holds_tokens

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

request = pb.ActivityRequest(name="a")
request.input.value = b"i" * (64 << 20)
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")
before = peak()
assert not holds_tokens(request, FilePayloadStore(sys.argv[1]))
print((peak() - before) / (64 << 20))
"""


def test_looking_for_tokens_serializes_no_copy_of_a_large_inline_payload(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HOLDS_TOKENS_PEAK, str(tmp_path)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    # ByteSize() serialized the wrapper into protobuf's own memory: two copies; its text read out is one.
    assert float(done.stdout) < 1.5, done.stdout


def relay(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("payload")
    result = yield ctx.call_activity("same", input=value)
    return len(result)


def _orchestration_item(store: FilePayloadStore) -> tuple[pb.WorkItem, dict[str, str]]:
    event, scheduled, result = ('"' + c * 300_000 + '"' for c in "esr")
    tokens = {
        name: store.upload(text, instance_id="f") for name, text in (("e", event), ("s", scheduled), ("r", result))
    }
    history = History("f").started("relay").orchestrator_started().event_raised("payload", "x")
    history.task_scheduled(1, "same").new().orchestrator_started().task_completed(1, "x")
    past, new = history.old, history.new_events
    past[-2].eventRaised.input.value = tokens["e"]
    past[-1].taskScheduled.input.value = tokens["s"]
    new[-1].taskCompleted.result.value = tokens["r"]
    request = pb.OrchestratorRequest(instanceId="f", pastEvents=past, newEvents=new)
    return pb.WorkItem(orchestratorRequest=request, completionToken="ct"), tokens


class CountingStore(FilePayloadStore):
    def download(self, token: str) -> bytes:
        self.downloaded = [*getattr(self, "downloaded", []), token]
        return super().download(token)


def test_an_orchestration_takes_its_payloads_when_it_decodes_them(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    item, tokens = _orchestration_item(store)
    fetched = FetchedPayloads(store)
    outcomes: list[Any] = []

    def handler(received: pb.WorkItem, stub: Any, done: Any) -> None:
        executor = OrchestrationExecutor(registry(relay), payload_limit=10 << 20, payloads=fetched)
        request = received.orchestratorRequest
        outcomes.append((received, executor.execute("f", request.pastEvents, request.newEvents)))
        done()

    items = PayloadWorkItems(
        handler,
        PayloadBoundary(store),
        logging.getLogger(),
        fetched=fetched,
        fetched_kinds=frozenset({"orchestratorRequest"}),
    )
    items(item, object(), lambda: None)
    items.close()
    [(received, result)] = outcomes
    [complete] = result.actions
    assert complete.completeOrchestration.result.value == "300000"  # the activity's result, fetched
    # The work item the runner saw kept its tokens; what the orchestration only sent was never fetched; what it
    # decoded was handed over once; nothing is left behind once the item is done.
    assert received.orchestratorRequest.newEvents[-1].taskCompleted.result.value == tokens["r"]
    assert sorted(store.downloaded) == sorted([tokens["e"], tokens["r"]])
    assert fetched._texts == {}


def test_a_payload_decoded_again_or_in_a_later_turn_is_fetched_then(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path)
    token = store.upload('"late"', instance_id="f")
    fetched = FetchedPayloads(store)
    assert fetched.resolve(token) == '"late"'  # not fetched with its work item (e.g. buffered in a session)
    assert fetched.resolve('"inline"') == '"inline"'
    events = History("f").new().started("relay").orchestrator_started().event_raised("payload", "x").new_events
    events[-1].eventRaised.input.value = token
    result = OrchestrationExecutor(registry(relay), payloads=fetched).execute("f", [], events)
    assert result.actions[0].scheduleTask.input.value == '"late"'


def _waits_after_a_timer(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.create_timer(ctx.current_utc_datetime)
    value = yield ctx.wait_for_external_event("payload")
    return value


def test_an_event_buffered_in_a_kept_session_needs_no_store_in_a_later_turn(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    token = store.upload('"late"', instance_id="f")
    fetched = FetchedPayloads(store)
    # Turn 1 brings the event before anyone waits for it: fetched with its work item, then that item is done.
    item = pb.WorkItem()
    events = History("f").new().started("_waits_after_a_timer").orchestrator_started().event_raised("payload", "x")
    item.orchestratorRequest.instanceId = "f"
    item.orchestratorRequest.newEvents.extend(events.new_events)
    item.orchestratorRequest.newEvents[-1].eventRaised.input.value = token
    _, tokens = fetched.fetch(item)
    executor = OrchestrationExecutor(registry(_waits_after_a_timer), payloads=fetched)
    executor.execute("f", [], item.orchestratorRequest.newEvents)
    fetched.forget(tokens)
    # Turn 2 of the kept session, with the store down: the wait takes the text turn 1 buffered.
    store.download = lambda token: (_ for _ in ()).throw(ConnectionError("store unreachable"))  # type: ignore[method-assign]
    fired = pb.HistoryEvent(eventId=-1, timerFired=pb.TimerFiredEvent(timerId=1))
    fired.timerFired.fireAt.GetCurrentTime()
    result = executor.resume([pb.HistoryEvent(orchestratorStarted=pb.OrchestratorStartedEvent()), fired])
    [complete] = result.actions
    assert complete.completeOrchestration.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED
    assert complete.completeOrchestration.result.value == '"late"'


def test_one_work_item_ending_keeps_what_the_next_item_of_the_instance_fetched(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    token = store.upload('"input"', instance_id="f")
    fetched = FetchedPayloads(store)
    item = pb.WorkItem()
    item.orchestratorRequest.instanceId = "f"
    item.orchestratorRequest.newEvents.extend(History("f").new().started("relay").new_events)
    item.orchestratorRequest.newEvents[0].executionStarted.input.value = token
    _, turn_n = fetched.fetch(item)  # turn N, still finishing
    _, turn_next = fetched.fetch(item)  # turn N+1 arrived with the same token
    assert fetched.resolve(token) == '"input"'  # turn N decodes it
    fetched.forget(turn_n)  # ... and ends
    assert fetched.resolve(token) == '"input"'  # turn N+1 still has it: no second download
    assert store.downloaded == [token, token]  # one download per work item, none at decoding
    fetched.forget(turn_next)
    assert fetched._texts == {} and fetched._holders == {}


def test_the_blob_store_keeps_no_payload_alive_after_its_first_upload(blob_store: Any) -> None:
    import gc
    import types

    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore

    data = bytes(range(256)) * 64
    frames = []
    # A client's store making the container, then a worker's meeting the one the client made.
    for _ in range(2):
        with BlobPayloadStore(blob_store.options) as fresh:
            gc.disable()  # so only references, not a cycle collection at some random moment, decide
            try:
                token = fresh.upload(data, instance_id="m")
                frames += [r.f_code.co_name for r in gc.get_referrers(data) if isinstance(r, types.FrameType)]
            finally:
                gc.enable()
            assert fresh.download(token) == data
    # Creating the container that existed raised an error kept in a reference cycle with its traceback, whose
    # frames reached back to the upload's, holding the payload until Python's next cycle collection.
    assert frames == [], frames


def test_the_blob_store_s_asyncio_methods_do_their_file_io_off_the_event_loop(
    blob_store: Any, monkeypatch: Any
) -> None:
    import asyncio
    import tempfile
    import threading

    from durabletask.extensions.azure_blob_payloads import blob_payload_store

    on_loop: list[str] = []
    loop_thread: list[int] = []
    temporary_file = tempfile.TemporaryFile

    class Spool:
        """A temporary file that notes each read or write made on the event loop's thread."""

        def __init__(self) -> None:
            self._file = temporary_file()

        def __getattr__(self, name: str) -> Any:
            attribute = getattr(self._file, name)
            if name not in ("read", "write", "readinto"):
                return attribute

            def noted(*args: Any) -> Any:
                if threading.get_ident() in loop_thread:
                    on_loop.append(name)
                return attribute(*args)

            return noted

        def __enter__(self) -> Spool:
            return self

        def __exit__(self, *args: object) -> None:
            self._file.close()

    monkeypatch.setattr(blob_payload_store.tempfile, "TemporaryFile", Spool)
    data = bytes(range(256)) * (24 * 1024)  # 6 MiB: more than one 4 MiB block each way

    async def round_trip() -> bytes:
        loop_thread.append(threading.get_ident())
        try:
            token = await blob_store.upload_async(data, instance_id="m")
            return bytes(await blob_store.download_async(token))
        finally:
            await blob_store.close_async()

    assert asyncio.run(round_trip()) == data
    # The storage client read the spooled upload, and wrote the download to its spool, on the loop's thread.
    assert on_loop == [], sorted(set(on_loop))
