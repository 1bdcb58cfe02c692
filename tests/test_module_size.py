"""Every hand-written module stays small enough to read in one sitting."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 600
# Generated code and what tools put in the checkout (virtual environments, caches, downloaded sources under .cache/).
SKIP_PARTS = {"_proto", "build", "dist", "site", "artifacts"}


def _is_tooling(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts[:-1]) or bool(SKIP_PARTS.intersection(relative.parts))


def test_no_hand_written_module_over_600_lines() -> None:
    too_long = []
    for path in ROOT.rglob("*.py"):
        if _is_tooling(path.relative_to(ROOT)) or path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
            continue
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > LIMIT:
            too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, "split these modules by responsibility:\n" + "\n".join(too_long)


def test_the_size_check_sees_the_package() -> None:
    # Guards the test above against silently scanning nothing.
    assert (ROOT / "durabletask" / "_json_codec.py").exists()
    assert any(ROOT.rglob("durabletask/**/*.py"))
    assert not _is_tooling(Path("durabletask/_json_codec.py"))
    assert _is_tooling(Path(".cache/langgraph-server/sdk/tests/test_client_stream.py"))
