"""The message walkers, tokens, compression and the folder store, without a server."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.payload import (
    FilePayloadStore,
    FilePayloadStoreOptions,
    LargePayloadStorageOptions,
    PayloadStoreError,
    StoredPayloadTooLargeError,
    deexternalize_payloads,
    deexternalize_payloads_async,
    externalize_payloads,
    externalize_payloads_async,
)
from durabletask.payload.store import pack, parse_token, unpack

BIG = "x" * (300 * 1024)


def test_defaults_match_microsofts() -> None:
    options = LargePayloadStorageOptions()
    assert (options.threshold_bytes, options.max_stored_payload_bytes, options.enable_compression) == (
        262_144,
        10 * 1024 * 1024,
        True,
    )


def test_token_format() -> None:
    assert parse_token("blob:v1:box:inst/abc") == ("box", "inst/abc")
    for bad in ("blob:v1:", "blob:v1:box", "blob:v1::name", "blob:v2:box:n", "hello"):
        with pytest.raises(ValueError, match="not a payload token"):
            parse_token(bad)


def test_compression_is_detected_on_read() -> None:
    data = b'"' + b"a" * 10_000 + b'"'
    assert pack(data, True)[:2] == b"\x1f\x8b" and len(pack(data, True)) < len(data)
    assert unpack(pack(data, True)) == data and unpack(pack(data, False)) == data


def _work_item(value: str) -> pb.WorkItem:
    started = pb.HistoryEvent(executionStarted=pb.ExecutionStartedEvent(name="o"))
    started.executionStarted.input.value = value
    completed = pb.HistoryEvent(taskCompleted=pb.TaskCompletedEvent(taskScheduledId=1))
    completed.taskCompleted.result.value = value
    request = pb.OrchestratorRequest(instanceId="inst-1", pastEvents=[started], newEvents=[completed])
    return pb.WorkItem(orchestratorRequest=request)


def test_nested_history_payloads_round_trip(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path)
    item = _work_item(BIG)
    externalize_payloads(item, store)
    request = item.orchestratorRequest
    tokens = [request.pastEvents[0].executionStarted.input.value, request.newEvents[0].taskCompleted.result.value]
    assert all(t.startswith("blob:v1:durabletask-payloads:inst-1/") for t in tokens)
    assert len({*tokens}) == 2
    stored = list((tmp_path / "durabletask-payloads" / "inst-1").iterdir())
    assert len(stored) == 2 and gzip.decompress(stored[0].read_bytes()) == BIG.encode()
    deexternalize_payloads(item, store)
    assert item == _work_item(BIG)


def test_threshold_is_in_utf8_bytes(tmp_path: Path) -> None:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, threshold_bytes=100))
    at_limit = pb.RaiseEventRequest(instanceId="i", name="e")
    at_limit.input.value = "é" * 50  # 100 bytes: stays
    over = pb.RaiseEventRequest(instanceId="i", name="e")
    over.input.value = "é" * 51  # 102 bytes: goes
    externalize_payloads(at_limit, store)
    externalize_payloads(over, store)
    assert at_limit.input.value == "é" * 50 and store.is_known_token(over.input.value)


def test_over_the_stored_limit_names_instance_and_field(tmp_path: Path) -> None:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, max_stored_payload_bytes=1000 * 1024))
    request = pb.CreateInstanceRequest(instanceId="big-one", name="o")
    request.input.value = "y" * (1001 * 1024)
    with pytest.raises(StoredPayloadTooLargeError, match=r"^input of instance 'big-one' is 1025024 bytes") as e:
        externalize_payloads(request, store)
    assert isinstance(e.value, ValueError) and not any(tmp_path.rglob("*"))


def test_missing_payload_is_an_error_naming_instance_and_field(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path)
    item = _work_item(BIG)
    externalize_payloads(item, store)
    for path in (tmp_path / "durabletask-payloads" / "inst-1").iterdir():
        path.unlink()
    with pytest.raises(
        PayloadStoreError,
        match=r"cannot fetch the pastEvents\[0\]\.executionStarted\.input of "
        r"instance 'inst-1'",
    ) as e:
        deexternalize_payloads(item.orchestratorRequest, store)
    assert e.value.permanent and e.value.instance_id == "inst-1"


@pytest.mark.parametrize("token", ["blob:v1:box", "blob:v1:../../etc:passwd", "blob:v1:..:x"])
def test_corrupt_or_foreign_tokens_are_errors(tmp_path: Path, token: str) -> None:
    request = pb.GetInstanceResponse(exists=True, orchestrationState=pb.OrchestrationState(instanceId="i9"))
    request.orchestrationState.input.value = token
    with pytest.raises(PayloadStoreError, match=r"orchestrationState\.input of instance 'i9'"):
        deexternalize_payloads(request, FilePayloadStore(tmp_path))


def test_a_token_outside_the_folder_is_refused(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path / "store")
    (tmp_path / "secret").write_text("no")
    assert not store.is_known_token("blob:v1:durabletask-payloads:../../secret")


def test_instance_ids_cannot_escape_the_folder(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path / "store")
    token = store.upload(b"data", instance_id="../../evil")
    assert store.download(token) == b"data"
    assert all(p.is_relative_to(tmp_path / "store") for p in tmp_path.rglob("*") if p.is_file())
    assert store.delete_instance_payloads("../../evil") == 1


def test_async_helpers_round_trip(tmp_path: Path) -> None:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, enable_compression=False))
    request = pb.ActivityResponse(instanceId="a1", taskId=3)
    request.result.value = BIG

    async def run() -> None:
        await externalize_payloads_async(request, store)
        assert store.is_known_token(request.result.value)
        await deexternalize_payloads_async(request, store)

    asyncio.run(run())
    assert request.result.value == BIG


def test_tokens_are_left_alone_when_externalizing_again(tmp_path: Path) -> None:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, threshold_bytes=10))
    request = pb.TerminateRequest(instanceId="t")
    request.output.value = BIG
    externalize_payloads(request, store)
    token = request.output.value
    externalize_payloads(request, store)  # a retried request must not store the token itself
    assert request.output.value == token and len(list(tmp_path.rglob("*"))) == 3  # container, instance, blob


def test_a_blob_that_is_not_utf8_text_is_an_error(tmp_path: Path) -> None:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, enable_compression=False))
    token = store.upload(b"\xff\xfe not text", instance_id="u1")
    response = pb.GetInstanceResponse(exists=True, orchestrationState=pb.OrchestrationState(instanceId="u1"))
    response.orchestrationState.output.value = token
    with pytest.raises(PayloadStoreError, match=r"orchestrationState\.output of instance 'u1'.*UnicodeDecodeError"):
        deexternalize_payloads(response, store)


@pytest.mark.parametrize("n", [0, 1, 126, 127, 128, 129, 16383, 16384, 16385, 2_097_151, 2_097_152])
def test_payload_sizes_are_read_without_copying_the_text(n: int) -> None:
    from google.protobuf import wrappers_pb2

    from durabletask.payload.helpers import _utf8_size

    for text in ("a" * n, "é" * (n // 2)):
        assert _utf8_size(wrappers_pb2.StringValue(value=text)) == len(text.encode())


def test_the_names_microsofts_package_offers() -> None:
    import durabletask
    import durabletask.azuremanaged.client as dts_client
    import durabletask.azuremanaged.worker as dts_worker
    import durabletask.client as client_module
    import durabletask.worker as worker_module
    from durabletask import payload
    from durabletask.payload import helpers, store

    assert {"LargePayloadStorageOptions", "PayloadStore"} <= set(durabletask.__all__)
    for module in (durabletask, client_module, worker_module, dts_client, dts_worker):
        assert module.PayloadStore is store.PayloadStore
    assert client_module.payload_helpers is helpers and worker_module.payload_helpers is helpers
    assert {"LargePayloadStorageOptions", "PayloadStore", "deexternalize_payloads", "deexternalize_payloads_async",
            "externalize_payloads", "externalize_payloads_async"} <= set(payload.__all__)
