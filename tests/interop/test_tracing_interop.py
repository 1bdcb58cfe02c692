"""Traces across SDKs: Microsoft's and ours emit the same spans, and a trace started by one is continued by the other.

Each side runs tests/interop/peer_scripts/traced.py in its own interpreter (Microsoft's SDK from the peer venv,
ours from this checkout), against our emulator, exporting its spans as JSON. The orchestration calls an
activity, waits on a timer, calls a sub-orchestration and sends an event.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, our_env, peer_env

pytestmark = [pytest.mark.interop, pytest.mark.local_only]

SCRIPT = ROOT / "tests" / "interop" / "peer_scripts" / "traced.py"


def _run(python: str, env: dict[str, str], role: str, address: str, hub: str, iid: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [python, str(SCRIPT), role, address, hub, iid],
        env=env, cwd="/", capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    spans: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return spans


def ours(role: str, address: str, hub: str, iid: str) -> list[dict[str, Any]]:
    return _run(sys.executable, our_env(), role, address, hub, iid)


def microsofts(peer_py: Path, role: str, address: str, hub: str, iid: str) -> list[dict[str, Any]]:
    return _run(str(peer_py), peer_env(), role, address, hub, iid)


def tree(spans: list[dict[str, Any]], iid: str) -> list[Any]:
    """Nested ``[label, children]`` of name, kind, attributes and status, ordered by label; IDs left out."""
    ids = {s["span_id"] for s in spans}
    assert len(ids) == len(spans), "a span ID was recorded twice"

    def label(span: dict[str, Any]) -> str:
        attrs = {
            k: ("<time>" if k == "durabletask.fire_at" else str(v).replace(iid, "<id>"))
            for k, v in sorted(span["attributes"].items())
        }
        return f"{span['name']} [{span['kind']}] {span['status']} {attrs}"

    def build(parent: str | None) -> list[Any]:
        kids = [s for s in spans if (s["parent_id"] if s["parent_id"] in ids else None) == parent]
        return sorted([label(s), build(s["span_id"])] for s in kids)

    return build(None)


def render(nodes: list[Any], depth: int = 0) -> str:
    return "\n".join("  " * depth + label + ("\n" + render(kids, depth + 1) if kids else "") for label, kids in nodes)


def same(got: list[Any], want: list[Any]) -> None:
    """Equal trees, each one connected trace (a single root: the client's span)."""
    assert len(want) == 1, f"Microsoft's spans are not one tree:\n{render(want)}"
    assert got == want, f"ours:\n{render(got)}\nMicrosoft's:\n{render(want)}"


@pytest.fixture
def hub(emulator_port: int) -> tuple[str, str]:
    return f"localhost:{emulator_port}", f"trace{uuid.uuid4().hex[:10]}"


def _one_trace(spans: list[dict[str, Any]]) -> None:
    assert len({s["trace_id"] for s in spans}) == 1, sorted({(s["trace_id"], s["name"]) for s in spans})


def test_our_spans_are_microsofts(peer_py: Path, hub: tuple[str, str]) -> None:
    theirs_iid, our_iid = f"ms-{uuid.uuid4().hex[:8]}", f"us-{uuid.uuid4().hex[:8]}"
    theirs = microsofts(peer_py, "both", *hub, theirs_iid)
    mine = ours("both", *hub, our_iid)
    _one_trace(theirs)
    _one_trace(mine)
    same(tree(mine, our_iid), tree(theirs, theirs_iid))


def test_microsofts_client_our_worker_is_one_trace(peer_py: Path, hub: tuple[str, str]) -> None:
    iid, reference_iid = f"mc-{uuid.uuid4().hex[:8]}", f"ms-{uuid.uuid4().hex[:8]}"
    reference = tree(microsofts(peer_py, "both", *hub, reference_iid), reference_iid)
    spans = microsofts(peer_py, "client", *hub, iid) + ours("worker", *hub, iid)
    _one_trace(spans)
    same(tree(spans, iid), reference)


def test_our_client_microsofts_worker_is_one_trace(peer_py: Path, hub: tuple[str, str]) -> None:
    iid, reference_iid = f"oc-{uuid.uuid4().hex[:8]}", f"ms-{uuid.uuid4().hex[:8]}"
    reference = tree(microsofts(peer_py, "both", *hub, reference_iid), reference_iid)
    spans = ours("client", *hub, iid) + microsofts(peer_py, "worker", *hub, iid)
    _one_trace(spans)
    same(tree(spans, iid), reference)
