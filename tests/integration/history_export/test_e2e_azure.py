"""Export jobs on the emulator writing to a real Azurite, and the errors an unusable destination gives."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceNotFoundError, ServiceRequestError
from azure.storage.blob import BlobServiceClient

from durabletask.extensions.history_export import (
    ExportDestination,
    ExportJobCreationOptions,
    ExportJobStatus,
    ExportMode,
    read_exported_history,
)
from durabletask.extensions.history_export.azure_blob import (
    AzureBlobHistoryExportWriter,
    AzureBlobHistoryExportWriterOptions,
)
from tests.integration.history_export.conftest import ExportHub
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite


def _batch(container: str, prefix: str | None = None) -> ExportJobCreationOptions:
    now = datetime.now(timezone.utc)
    return ExportJobCreationOptions(
        mode=ExportMode.BATCH,
        completed_time_from=now - timedelta(hours=1),
        completed_time_to=now + timedelta(hours=1),
        destination=ExportDestination(container=container, prefix=prefix),
        max_instances_per_batch=2,
    )


def test_batch_export_to_azurite_stores_gzip_blobs_with_metadata(
    export_hub: ExportHub, azurite: Azurite, short_waits: None
) -> None:
    container = f"c{uuid.uuid4().hex[:12]}"
    writer = AzureBlobHistoryExportWriter(
        AzureBlobHistoryExportWriterOptions(container_name=container, connection_string=azurite.connection_string)
    )
    exporter = export_hub.export_client(writer)
    ids = export_hub.run_instances(["ada", "fail-bo", "cy"], prefix="az")
    exporter.create_job(_batch(container, prefix="2026/01/"), job_id="to-azurite")
    final = exporter.wait_for_job("to-azurite", timeout=60, poll_interval=0.2)
    writer.close()
    assert final.status is ExportJobStatus.COMPLETED, final.last_error
    assert (final.scanned_instances, final.exported_instances) == (3, 3)

    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    blobs = service.get_container_client(container)
    found = {}
    for item in blobs.list_blobs(include=["metadata"]):
        assert item.name.startswith("2026/01/") and item.name.endswith(".jsonl.gz")
        assert item.content_settings.content_type == "application/x-ndjson"
        assert item.content_settings.content_encoding == "gzip"
        exported = read_exported_history(blobs.download_blob(item.name, decompress=False).readall())
        assert item.metadata == {"instance_id": exported.instance_id}
        found[exported.instance_id] = exported
    service.close()
    assert sorted(found) == sorted(ids)


def test_a_missing_container_fails_the_job_naming_the_error(
    export_hub: ExportHub, azurite: Azurite, short_waits: None
) -> None:
    writer = AzureBlobHistoryExportWriter(
        AzureBlobHistoryExportWriterOptions(
            container_name="never-created",
            connection_string=azurite.connection_string,
            create_container_if_not_exists=False,
        )
    )
    exporter = export_hub.export_client(writer)
    [instance_id] = export_hub.run_instances(["ada"], prefix="nf")
    exporter.create_job(_batch("never-created"), job_id="no-container")
    final = exporter.wait_for_job("no-container", timeout=60, poll_interval=0.2)
    writer.close()
    assert final.status is ExportJobStatus.FAILED
    assert (final.exported_instances, final.failed_instances) == (0, 1)
    assert final.last_error is not None and "ResourceNotFoundError" in final.last_error
    assert instance_id in final.last_error
    assert [f.instance_id for f in final.failures] == [instance_id]
    assert final.failures[0].attempt_count == 3


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _unreachable_connection_string() -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{_dead_port()}/{ACCOUNT};"
    )


PEER_WRITE = """
import sys
from azure.storage.blob import BlobServiceClient
from durabletask.extensions.history_export.azure_blob import (
    AzureBlobHistoryExportWriter, AzureBlobHistoryExportWriterOptions)
options = AzureBlobHistoryExportWriterOptions(container_name=sys.argv[2], connection_string=sys.argv[1],
                                              create_container_if_not_exists=sys.argv[3] == "create")
writer = AzureBlobHistoryExportWriter(options)
# Microsoft's options cannot turn the storage client's retries off; without this the write backs off for a minute.
writer._service = BlobServiceClient.from_connection_string(sys.argv[1], retry_total=0)
try:
    writer.write(instance_id="i", container="x", blob_name="b.jsonl.gz",
        payload=b"x", content_type="application/x-ndjson", content_encoding="gzip")
except Exception as exc:
    print(type(exc).__module__ + "." + type(exc).__name__)
"""


def _microsofts_error(peer_py: Path, tmp_path: Path, connection: str, container: str, create: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(peer_py), "-c", PEER_WRITE, connection, container, "create" if create else "no"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.interop
@pytest.mark.parametrize("case", ["unreachable", "missing container"])
def test_an_unusable_destination_raises_the_error_microsofts_writer_raises(
    case: str, peer_py: Path, azurite: Azurite, tmp_path: Path
) -> None:
    unreachable = case == "unreachable"
    connection = _unreachable_connection_string() if unreachable else azurite.connection_string
    expected = ServiceRequestError if unreachable else ResourceNotFoundError
    options = AzureBlobHistoryExportWriterOptions(
        container_name="absent",
        connection_string=connection,
        create_container_if_not_exists=unreachable,
        retry_total=0,
    )
    with AzureBlobHistoryExportWriter(options) as writer, pytest.raises(expected) as raised:
        writer.write(
            instance_id="i",
            container="x",
            blob_name="b.jsonl.gz",
            payload=b"x",
            content_type="application/x-ndjson",
            content_encoding="gzip",
        )
    if not unreachable:
        assert "ContainerNotFound" in str(raised.value)
    theirs = _microsofts_error(peer_py, tmp_path, connection, "absent", unreachable)
    assert theirs == f"{expected.__module__}.{expected.__name__}"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"container_name": ""}, "container_name is required"),
        ({"account_url": "http://x"}, "'connection_string' and 'account_url' are mutually exclusive"),
        ({"connection_string": None}, "Either 'connection_string' or 'account_url'"),
        ({"connection_string": None, "account_url": "http://x"}, "'credential' is required"),
        ({"retry_total": -1}, "retry_total must be zero or more; got -1"),
    ],
)
def test_writer_options_name_the_field_in_error(changes: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"container_name": "c", "connection_string": "UseDevelopmentStorage=true"}
    fields.update(changes)
    with pytest.raises(ValueError) as raised:
        AzureBlobHistoryExportWriterOptions(**fields)  # type: ignore[arg-type]
    assert message in str(raised.value)
