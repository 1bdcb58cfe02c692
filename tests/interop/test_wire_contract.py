"""Our compiled protocol descriptors equal the official SDK's, field by field (loaded in separate processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.local_only("compares compiled descriptors; talks to no backend")

ROOT = Path(__file__).resolve().parents[2]

# Dumps every message, field (name, number, type, label, type name, oneof, proto3 optional), enum value, RPC and
# streaming flag of a generated module's file descriptor as JSON. Run in each interpreter.
_DUMP = r"""
import importlib, json, sys
from google.protobuf.descriptor_pb2 import FileDescriptorProto
mod = importlib.import_module(sys.argv[1])
fd = FileDescriptorProto()
mod.DESCRIPTOR.CopyToProto(fd)
def msg(m, prefix=""):
    out = {}
    name = prefix + m.name
    out[name] = {
        "fields": sorted([f.name, f.number, f.type, f.label, f.type_name.split(".")[-1],
                          f.oneof_index if f.HasField("oneof_index") else None, f.proto3_optional]
                         for f in m.field),
        "oneofs": [o.name for o in m.oneof_decl],
        "reserved": sorted([r.start, r.end] for r in m.reserved_range),
        "map_entry": m.options.map_entry,
    }
    for n in m.nested_type:
        out.update(msg(n, name + "."))
    return out
messages = {}
for m in fd.message_type:
    messages.update(msg(m))
print(json.dumps({
    "package": fd.package,
    "syntax": fd.syntax,
    "dependencies": sorted(fd.dependency),
    "messages": messages,
    "enums": {e.name: sorted([v.name, v.number] for v in e.value) for e in fd.enum_type},
    "services": {s.name: sorted([m.name, m.input_type, m.output_type, m.client_streaming, m.server_streaming]
                                for m in s.method) for s in fd.service},
}, sort_keys=True))
"""


def _clean_env() -> dict[str, str]:
    # The peer must import its own package, never ours from PYTHONPATH or the working directory.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _dump(python: str | Path, module: str) -> dict[str, Any]:
    out = subprocess.run(
        [str(python), "-c", _DUMP, module], capture_output=True, text=True, check=True, cwd="/", env=_clean_env()
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_descriptors_equal_the_official_sdk(peer_py: Path) -> None:
    theirs = _dump(peer_py, "durabletask.internal.orchestrator_service_pb2")
    ours = _dump(sys.executable, "durabletask._proto.orchestrator_service_pb2")
    assert ours["package"] == "" == theirs["package"]
    for section in ("syntax", "dependencies", "enums", "services"):
        assert ours[section] == theirs[section], section
    assert sorted(ours["messages"]) == sorted(theirs["messages"])
    for name, spec in theirs["messages"].items():
        assert ours["messages"][name] == spec, f"message {name} differs"


def test_rpc_paths_have_no_package_prefix() -> None:
    from durabletask._proto import orchestrator_service_pb2 as pb

    service = pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"]
    assert service.full_name == "TaskHubSidecarService"
    assert len(service.methods) >= 28
