"""Payloads stored by our SDK are read by Microsoft's and the reverse: same tokens, same blobs, on our emulator."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from durabletask import client, task
from tests.support.azurite import Azurite

from .conftest import Side

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
SIZE = 400 * 1024


def xsdk_double(ctx: task.ActivityContext, value: str) -> str:
    return value + value


def xsdk_orch(ctx: task.OrchestrationContext, value: str) -> Any:
    doubled = yield ctx.call_activity(xsdk_double, input=value)
    return doubled


def _peer_env() -> dict[str, str]:
    # Without PYTHONPATH the peer imports its own durabletask, never ours.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _peer(peer_py: Path, mode: str, side: Side, azurite: Azurite, container: str) -> list[str]:
    taskhub = side.metadata[0][1]
    port = side.address.rsplit(":", 1)[1]
    return [str(peer_py), str(HERE / "peer_blob.py"), mode, port, taskhub, azurite.connection_string, container]


def test_our_client_and_microsofts_worker(peer_py: Path, blob_side: Side, azurite: Azurite) -> None:
    assert blob_side.store is not None
    container = blob_side.store.options.container_name
    peer = subprocess.Popen(
        _peer(peer_py, "worker", blob_side, azurite, container),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_peer_env(),
    )
    try:
        assert peer.stdout is not None and peer.stdout.readline().strip() == "ready", peer.stderr
        c = blob_side.client()
        iid = c.schedule_new_orchestration("xsdk_orch", input="o" * SIZE, instance_id=f"x-{uuid.uuid4().hex[:8]}")
        state = c.wait_for_orchestration_completion(iid, timeout=60)
    finally:
        peer.communicate("", timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "") == "o" * SIZE * 2
    raw = blob_side.client(store=None).get_orchestration_state(iid)
    assert raw is not None and (raw.serialized_output or "").startswith(f"blob:v1:{container}:{iid}/")


def test_microsofts_client_and_our_worker(peer_py: Path, blob_side: Side, azurite: Azurite) -> None:
    assert blob_side.store is not None
    blob_side.worker(xsdk_orch, activities=(xsdk_double,))
    done = subprocess.run(
        _peer(peer_py, "client", blob_side, azurite, blob_side.store.options.container_name),
        capture_output=True,
        text=True,
        timeout=120,
        env=_peer_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "status": "COMPLETED",
        "output_ok": True,
        "raw_input": "blob:v1:",
    }
