"""The worker's payload wrapper: what it sends back for a work item it cannot restore, and that it lets go of it."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from durabletask._grpc.large_payloads import PayloadBoundary
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._worker.large_payloads import PayloadWorkItems
from durabletask.payload import FilePayloadStore


class RecordingStub:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda request, **_: self.calls.append((name, request))


class DownStore(FilePayloadStore):
    def download(self, token: str) -> bytes:
        raise ConnectionError("the store is unreachable")


def _item(token: str) -> pb.WorkItem:
    started = pb.HistoryEvent(executionStarted=pb.ExecutionStartedEvent(name="o"))
    started.executionStarted.input.value = token
    request = pb.OrchestratorRequest(instanceId="w1", newEvents=[started])
    return pb.WorkItem(orchestratorRequest=request, completionToken="ct")


def _run(store: FilePayloadStore, item: pb.WorkItem) -> tuple[RecordingStub, list[pb.WorkItem], list[int]]:
    handled: list[pb.WorkItem] = []
    done: list[int] = []

    def handler(i: pb.WorkItem, s: Any, d: Any) -> None:
        handled.append(i)

    wrapper = PayloadWorkItems(handler, PayloadBoundary(store), logging.getLogger())
    stub = RecordingStub()
    wrapper(item, stub, lambda: done.append(1))
    wrapper.close()  # waits for the restore on its pool thread
    return stub, handled, done


def test_a_missing_payload_fails_the_orchestration_and_releases_the_item(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path)
    stub, handled, done = _run(store, _item("blob:v1:durabletask-payloads:w1/gone"))
    assert handled == [] and done == [1]
    [(method, response)] = stub.calls
    assert method == "CompleteOrchestratorTask" and response.completionToken == "ct"
    complete = response.actions[0].completeOrchestration
    assert complete.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
    assert "executionStarted.input of instance 'w1'" in complete.failureDetails.errorMessage


def test_an_unreachable_store_abandons_the_item_and_releases_it(tmp_path: Path) -> None:
    token = FilePayloadStore(tmp_path).upload(b'"x"', instance_id="w1")
    stub, handled, done = _run(DownStore(tmp_path), _item(token))
    assert handled == [] and done == [1]
    assert [m for m, _ in stub.calls] == ["AbandonTaskOrchestratorWorkItem"]


def test_a_restored_item_is_handed_on_with_its_release(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path)
    token = store.upload(b'"restored"', instance_id="w1")
    item = _item(token)
    stub, handled, done = _run(store, item)
    assert done == [] and stub.calls == []
    [handed_on] = handled
    assert handed_on.orchestratorRequest.newEvents[0].executionStarted.input.value == '"restored"'
    # The message the stream received keeps its token: the restored copy is freed with the work item.
    assert item.orchestratorRequest.newEvents[0].executionStarted.input.value == token


class SlowStore(FilePayloadStore):
    """Fetching blocks until the test lets it go, as a store that stopped answering would."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.fetching = threading.Event()
        self.release = threading.Event()

    def download(self, token: str) -> bytes:
        self.fetching.set()
        self.release.wait()
        return super().download(token)


def test_a_slow_download_does_not_hold_up_the_next_work_item(tmp_path: Path) -> None:
    store = SlowStore(tmp_path)
    slow = _item(store.upload(b'"slow"', instance_id="w1"))
    plain = pb.WorkItem(activityRequest=pb.ActivityRequest(name="a"), completionToken="next")
    handled: list[str] = []
    plain_handled = threading.Event()

    def handler(item: pb.WorkItem, stub: Any, done: Any) -> None:
        handled.append(item.completionToken)
        if item.completionToken == "next":
            plain_handled.set()
        done()

    wrapper = PayloadWorkItems(handler, PayloadBoundary(store), logging.getLogger())

    def stream() -> None:  # what the worker's stream thread does with two items in a row
        wrapper(slow, RecordingStub(), lambda: None)
        wrapper(plain, RecordingStub(), lambda: None)

    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    try:
        assert store.fetching.wait(30)
        assert plain_handled.wait(30), "the second work item waited for the first one's download"
        assert handled == ["next"]
    finally:
        store.release.set()
        reader.join(30)
        wrapper.close()
    assert handled == ["next", "ct"]
