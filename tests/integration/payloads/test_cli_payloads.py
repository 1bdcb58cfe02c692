"""``durabletask get`` with externalized payloads: a token with its size and a hint, or the payload itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from durabletask.payload import FilePayloadStore

from .conftest import Side

SIZE = 300 * 1024


def _cli(side: Side, *argv: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")}
    where = ["--endpoint", side.address, "--taskhub", side.metadata[0][1]]
    proc = subprocess.run(
        [sys.executable, "-m", "durabletask.cli", *where, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_get_shows_tokens_and_resolves_them(emulator_port: int, tmp_path: Path) -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        side = Side(emulator_port, FilePayloadStore(tmp_path), stack)
        iid = side.client().schedule_new_orchestration("not-run", input="p" * SIZE)

        code, out, err = _cli(side, "get", iid)
        assert code == 0, err
        line = next(x for x in out.splitlines() if x.startswith("input"))
        assert "<externalized payload blob:v1:durabletask-payloads:" in line and "size unknown" in line
        assert "durabletask get --payloads" in line

        code, out, err = _cli(side, "get", iid, "--payload-dir", str(tmp_path))
        assert code == 0, err
        assert f"{SIZE + 2} bytes" in next(x for x in out.splitlines() if x.startswith("input"))

        code, out, err = _cli(side, "--json", "get", iid, "--payloads", "--payload-dir", str(tmp_path))
        assert code == 0, err
        assert json.loads(json.loads(out)["serialized_input"]) == "p" * SIZE

        code, _, err = _cli(side, "get", iid, "--payloads")
        assert code != 0 and "--payloads needs --payload-dir DIR or --blob-connection-string CS" in err

        for blob in tmp_path.rglob("*"):
            if blob.is_file():
                blob.unlink()
        code, _, err = _cli(side, "get", iid, "--payloads", "--payload-dir", str(tmp_path))
        assert code == 1 and f"cannot fetch the input of instance '{iid}'" in err, err


def measure(ctx: Any, value: str) -> int:
    return len(value)


def test_history_shows_tokens_as_tokens_and_resolves_them(emulator_port: int, tmp_path: Path) -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        side = Side(emulator_port, FilePayloadStore(tmp_path), stack)
        side.worker(measure)
        c = side.client()
        iid = c.schedule_new_orchestration(measure, input="h" * SIZE)
        assert c.wait_for_orchestration_completion(iid, timeout=30) is not None

        code, out, err = _cli(side, "history", iid)
        assert code == 0, err
        [row] = [x for x in out.splitlines() if "ExecutionStarted" in x]
        assert "input externalized as blob:v1:durabletask-payloads:" in row
        assert " B " not in row  # a token's length is not shown as the payload's size

        code, out, err = _cli(side, "history", iid, "--payload-dir", str(tmp_path))
        assert code == 0, err
        [row] = [x for x in out.splitlines() if "ExecutionStarted" in x]
        assert f"{SIZE + 2} B" in row and "externalized" not in row

        code, out, err = _cli(side, "--json", "history", iid, "--payload-dir", str(tmp_path))
        assert code == 0, err
        [started] = [e for e in json.loads(out) if e["type"] == "ExecutionStartedEvent"]
        assert json.loads(started["input"]) == "h" * SIZE
