"""The worker's payload wrapper: what it sends back for a work item it cannot restore, and that it lets go of it."""

from __future__ import annotations

import logging
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


def _run(store: FilePayloadStore, item: pb.WorkItem) -> tuple[RecordingStub, list[str], list[int]]:
    handled: list[str] = []
    done: list[int] = []
    wrapper = PayloadWorkItems(lambda i, s, d: handled.append("handled"), PayloadBoundary(store), logging.getLogger())
    stub = RecordingStub()
    wrapper(item, stub, lambda: done.append(1))
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
    assert handled == ["handled"] and done == [] and stub.calls == []
    assert item.orchestratorRequest.newEvents[0].executionStarted.input.value == '"restored"'
