"""``durabletask export`` into a blob container of a real Azurite, run as a subprocess against our emulator."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import uuid
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from durabletask import task
from tests.support.azurite import Azurite

from .conftest import Side


def export_echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def _cli(side: Side, *argv: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")}
    where = ["--endpoint", side.address, "--taskhub", side.metadata[0][1]]
    proc = subprocess.run([sys.executable, "-m", "durabletask.cli", *where, *argv], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_export_to_an_azurite_container(emulator_port: int, azurite: Azurite, tmp_path: Path) -> None:
    from azure.storage.blob import BlobServiceClient

    with ExitStack() as stack:
        side = Side(emulator_port, None, stack)
        side.worker(export_echo)
        c = side.client()
        ids = [c.schedule_new_orchestration(export_echo, input=i, instance_id=f"b-{uuid.uuid4().hex[:8]}")
               for i in range(5)]  # fmt: skip
        for iid in ids:
            assert c.wait_for_orchestration_completion(iid, timeout=60) is not None
        now = datetime.now(timezone.utc)
        container = f"exports-{uuid.uuid4().hex[:8]}"
        argv = [
            "--json", "export", "--since", (now - timedelta(hours=1)).isoformat(), "--until",
            (now + timedelta(hours=1)).isoformat(), "--to", container, "--prefix", "daily",
            "--blob-connection-string", azurite.connection_string, "--checkpoint", str(tmp_path / "cp.json"),
        ]  # fmt: skip
        code, out, err = _cli(side, *argv)
        assert code == 0, err
        result = json.loads(out)
        assert result["kind"] == "blob" and result["exported"] == 5 and result["failed"] == []
        assert result["destination"].endswith(f"/devstoreaccount1/{container}")

        service = BlobServiceClient.from_connection_string(azurite.connection_string)
        stack.callback(service.close)
        blobs = list(service.get_container_client(container).list_blobs(include=["metadata"]))
        assert len(blobs) == 5 and all(b.name.startswith("daily/") and b.name.endswith(".jsonl.gz") for b in blobs)
        assert {b.metadata["instance_id"] for b in blobs} == set(ids)
        assert all(b.content_settings.content_encoding == "gzip" for b in blobs)

        # A downloaded blob renders as the live instance's history does.
        blob = blobs[0]
        local = tmp_path / "one.jsonl.gz"
        local.write_bytes(service.get_blob_client(container, blob.name).download_blob(decompress=False).readall())
        assert json.loads(gzip.decompress(local.read_bytes()).splitlines()[0])["instance_id"] == blob.metadata[
            "instance_id"
        ]
        offline = _cli(side, "history", "--from-export", str(local))
        live = _cli(side, "history", blob.metadata["instance_id"])
        assert offline[0] == 0 and offline[1] == live[1]

        # Re-running the finished export writes nothing more.
        code, out, err = _cli(side, *argv)
        assert code == 0 and json.loads(out)["exported"] == 0, err
        assert len(list(service.get_container_client(container).list_blobs())) == 5
