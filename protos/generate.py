"""Generates both distributions' protocol stubs from protos/orchestrator_service.proto (``make proto``).

The SDK's copy (durabletask/_proto) registers in protobuf's default pool, as every SDK's does. The emulator's
copy (emulator/dtscale_emulator/protocol) is rewritten to register in the emulator's private pool, so that it
never clashes with another package's copy of the same file in one process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = "orchestrator_service.proto"
SDK_OUT = ROOT / "durabletask" / "_proto"
EMULATOR_OUT = ROOT / "emulator" / "dtscale_emulator" / "protocol"
PB2, GRPC, PYI = "orchestrator_service_pb2.py", "orchestrator_service_pb2_grpc.py", "orchestrator_service_pb2.pyi"
DEFAULT_POOL = "_descriptor_pool.Default().AddSerializedFile("
EMPTY_IMPORT = "from google.protobuf import empty_pb2 as google_dot_protobuf_dot_empty__pb2"


def protoc(out: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT / 'protos'}", f"--python_out={out}",
         f"--pyi_out={out}", f"--grpc_python_out={out}", PROTO],
        check=True,
    )
    grpc_file = out / GRPC
    text = grpc_file.read_text().replace("import orchestrator_service_pb2 as", "from . import orchestrator_service_pb2 as")
    grpc_file.write_text(text)


def to_private_pool(folder: Path) -> None:
    pb2 = folder / PB2
    text = pb2.read_text()
    if DEFAULT_POOL not in text:
        raise SystemExit(f"{pb2}: the generated code no longer registers through {DEFAULT_POOL!r}")
    text = text.replace(DEFAULT_POOL, "_POOL.AddSerializedFile(")
    text = text.replace("# @@protoc_insertion_point(imports)",
                        "# @@protoc_insertion_point(imports)\nfrom ._pool import POOL as _POOL", 1)
    pb2.write_text(text)
    grpc_file = folder / GRPC
    text = grpc_file.read_text()
    if EMPTY_IMPORT not in text:
        raise SystemExit(f"{grpc_file}: expected {EMPTY_IMPORT!r}")
    grpc_file.write_text(text.replace(EMPTY_IMPORT, "from . import _pool as google_dot_protobuf_dot_empty__pb2"))


def main() -> None:
    protoc(SDK_OUT)
    with tempfile.TemporaryDirectory() as tmp:
        protoc(Path(tmp))
        to_private_pool(Path(tmp))
        for name in (PB2, GRPC, PYI):
            shutil.copyfile(Path(tmp) / name, EMULATOR_OUT / name)


if __name__ == "__main__":
    main()
