"""The exported file format, its names, reading it back, and the local-folder writer."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from durabletask import history, task
from durabletask.extensions.history_export import (
    ExportFormat,
    ExportFormatKind,
    HistoryWriter,
    LocalFolderHistoryWriter,
    read_exported_history,
)
from durabletask.extensions.history_export.activities import blob_name_for, dotnet_round_trip
from durabletask.extensions.history_export.azure_blob import (
    AzureBlobHistoryExportWriter,
    AzureBlobHistoryExportWriterOptions,
)
from durabletask.extensions.history_export.reader import event_from_dict, iter_exported_records
from durabletask.extensions.history_export.serialization import (
    content_encoding_for,
    content_type_for,
    file_extension_for,
    serialize_history,
)

T0 = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)
JSONL = ExportFormat()
JSON = ExportFormat(kind=ExportFormatKind.JSON)


def _events() -> list[history.HistoryEvent]:
    failure = task.FailureDetails(
        "outer", "builtins.ValueError", "trace", task.FailureDetails("inner", "builtins.KeyError", None), {"k": 1}
    )
    return [
        history.OrchestratorStartedEvent(event_id=-1, timestamp=T0),
        history.ExecutionStartedEvent(
            event_id=-1,
            timestamp=T0,
            name="greet",
            input='"ada"',
            orchestration_instance=history.OrchestrationInstance("i-1", "e-1"),
            scheduled_start_timestamp=T0 + timedelta(seconds=1),
            tags={"team": "ops"},
        ),
        history.TaskScheduledEvent(event_id=1, timestamp=T0, name="hello", input='"ü"'),
        history.TaskFailedEvent(event_id=-1, timestamp=T0, task_scheduled_id=1, failure_details=failure),
        history.ExecutionCompletedEvent(event_id=-1, timestamp=T0, orchestration_status=3, failure_details=failure),
    ]


def test_jsonl_gzip_is_a_metadata_line_then_one_line_per_event_with_sorted_keys() -> None:
    data = serialize_history(_events(), instance_id="i-1", fmt=JSONL, metadata={"name": "greet"})
    text = gzip.decompress(data).decode("utf-8")
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == 6
    assert json.loads(lines[0]) == {
        "kind": "metadata",
        "schema_version": "1.0",
        "instance_id": "i-1",
        "metadata": {"name": "greet"},
    }
    assert lines[0] == '{"instance_id":"i-1","kind":"metadata","metadata":{"name":"greet"},"schema_version":"1.0"}'
    assert [json.loads(line)["event_type"] for line in lines[1:]] == [type(e).__name__ for e in _events()]
    assert '"input":"\\"ü\\""' in lines[3]  # not escaped to ASCII
    # The same history gives the same bytes, and those are gzip.compress's with no time in the header.
    assert data == serialize_history(_events(), instance_id="i-1", fmt=JSONL, metadata={"name": "greet"})
    assert data == gzip.compress(text.encode("utf-8"), mtime=0)


def test_events_are_consumed_one_at_a_time() -> None:
    produced: list[int] = []

    def lazily() -> Iterator[history.HistoryEvent]:
        for k, event in enumerate(_events()):
            produced.append(k)
            yield event

    data = serialize_history(lazily(), instance_id="i-1", fmt=JSONL)
    assert produced == list(range(5)) and len(read_exported_history(data).records) == 5


def test_json_format_is_one_document() -> None:
    data = serialize_history(_events(), instance_id="i-1", fmt=JSON, metadata={"a": 1})
    document = json.loads(data)
    assert sorted(document) == ["events", "instance_id", "metadata", "schema_version"]
    assert len(document["events"]) == 5 and document["metadata"] == {"a": 1}
    assert "metadata" not in json.loads(serialize_history([], instance_id="i", fmt=JSON))


def test_format_headers_and_extensions() -> None:
    assert (content_type_for(JSONL), content_encoding_for(JSONL), file_extension_for(JSONL)) == (
        "application/x-ndjson",
        "gzip",
        ".jsonl.gz",
    )
    assert (content_type_for(JSON), content_encoding_for(JSON), file_extension_for(JSON)) == (
        "application/json",
        None,
        ".json",
    )


@pytest.mark.parametrize("fmt", [JSONL, JSON], ids=["jsonl-gzip", "json"])
def test_reading_back_gives_the_same_events(fmt: ExportFormat, tmp_path: Path) -> None:
    data = serialize_history(_events(), instance_id="i-1", fmt=fmt, metadata={"runtime_status": "FAILED"})
    path = tmp_path / ("f" + file_extension_for(fmt))
    path.write_bytes(data)
    for source in (data, path, str(path)):
        exported = read_exported_history(source)
        assert (exported.instance_id, exported.schema_version) == ("i-1", "1.0")
        assert exported.metadata == {"runtime_status": "FAILED"}
        assert exported.events() == _events()


def test_reading_rejects_what_is_not_an_export() -> None:
    with pytest.raises(ValueError, match="instance_id"):
        read_exported_history(gzip.compress(b'{"hello":1}\n'))
    with pytest.raises(ValueError, match="line 2"):
        list(iter_exported_records(gzip.compress(b'{"instance_id":"i"}\nnot json\n')))
    with pytest.raises(ValueError, match="unknown event_type 'Nope'"):
        event_from_dict({"event_type": "Nope", "event_id": 1})


def test_dotnet_round_trip_format() -> None:
    assert dotnet_round_trip(T0) == "2026-03-04T05:06:07.1234560+00:00"
    assert dotnet_round_trip(T0.replace(tzinfo=None)) == "2026-03-04T05:06:07.1234560+00:00"
    minus = timezone(-timedelta(hours=5, minutes=30))
    assert dotnet_round_trip(T0.replace(microsecond=0, tzinfo=minus)) == "2026-03-04T05:06:07.0000000-05:30"


PEER_NAMES = """
import json, sys
from datetime import datetime
from durabletask.extensions.history_export.activities import _blob_name_for
from durabletask.extensions.history_export.models import ExportFormat, ExportFormatKind
out = []
for instance_id, moment, prefix, kind in json.loads(sys.argv[1]):
    out.append(_blob_name_for(instance_id=instance_id, last_updated_at=datetime.fromisoformat(moment),
                              prefix=prefix, fmt=ExportFormat(kind=ExportFormatKind(kind))))
print(json.dumps(out))
"""


@pytest.mark.interop
def test_blob_names_are_microsofts(peer_py: Path, tmp_path: Path) -> None:
    cases = [
        ("i-1", T0.isoformat(), None, "JsonlGzip"),
        ("a/b c", "2026-03-04T05:06:07", "exports/2026/", "JsonlGzip"),
        ("ü", "2026-03-04T05:06:07.000001-05:30", "p", "Json"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(peer_py), "-c", PEER_NAMES, json.dumps(cases)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    ours = [
        blob_name_for(
            instance_id=i, last_updated_at=datetime.fromisoformat(m), prefix=p, fmt=ExportFormat(ExportFormatKind(k))
        )
        for i, m, p, k in cases
    ]
    assert ours == json.loads(done.stdout)
    assert ours[1].startswith("exports/2026/") and ours[2].endswith(".json")


def _write(writer: LocalFolderHistoryWriter, name: str, payload: bytes, container: str = "c") -> None:
    writer.write(
        instance_id="i",
        container=container,
        blob_name=name,
        payload=payload,
        content_type="application/x-ndjson",
        content_encoding="gzip",
        metadata={"instance_id": "i"},
    )


def test_local_folder_writer_lays_files_out_like_blobs_and_replaces_them_whole(tmp_path: Path) -> None:
    writer = LocalFolderHistoryWriter(tmp_path / "root")
    assert isinstance(writer, HistoryWriter)
    _write(writer, "p/q/abc.jsonl.gz", b"one")
    _write(writer, "p/q/abc.jsonl.gz", b"two")
    target = tmp_path / "root" / "c" / "p" / "q" / "abc.jsonl.gz"
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["abc.jsonl.gz"]  # no temporary file left


def test_local_folder_writer_without_overwrite_refuses_an_existing_name(tmp_path: Path) -> None:
    writer = LocalFolderHistoryWriter(tmp_path, overwrite=False)
    _write(writer, "x.jsonl.gz", b"one")
    with pytest.raises(FileExistsError, match="overwrite is off"):
        _write(writer, "x.jsonl.gz", b"two")
    assert (tmp_path / "c" / "x.jsonl.gz").read_bytes() == b"one"
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["x.jsonl.gz"]


@pytest.mark.parametrize(("container", "name"), [("c", "../escape"), ("..", "x"), ("c", "/abs"), ("", "")])
def test_local_folder_writer_refuses_names_leaving_its_root(tmp_path: Path, container: str, name: str) -> None:
    with pytest.raises(ValueError, match="not a relative path"):
        _write(LocalFolderHistoryWriter(tmp_path), name, b"x", container=container)


def test_the_azure_writer_is_a_history_writer() -> None:
    options = AzureBlobHistoryExportWriterOptions(container_name="c", connection_string="UseDevelopmentStorage=true")
    with AzureBlobHistoryExportWriter(options) as writer:  # connects on the first write only
        assert isinstance(writer, HistoryWriter)
