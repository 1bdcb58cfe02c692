"""``durabletask export`` to a local folder and ``durabletask history --from-export``, run as subprocesses."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id

pytestmark = pytest.mark.whole_taskhub("exports every terminal instance of the hub")


def _argv(hub: Hub, *argv: str) -> list[str]:
    return [sys.executable, "-m", "durabletask.cli", *hub.cli_args(), *argv]


def _env(hub: Hub) -> dict[str, str]:
    return hub.child_env({k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")})


def _run(hub: Hub, *argv: str) -> tuple[int, str, str]:
    proc = subprocess.run(_argv(hub, *argv), capture_output=True, text=True, timeout=120, env=_env(hub))
    return proc.returncode, proc.stdout, proc.stderr


def echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def explode(ctx: task.OrchestrationContext, value: Any) -> Any:
    raise ValueError(f"bad order {value}")


def _finish(hub: Hub, completed: int, failed: int) -> tuple[list[str], list[str]]:
    hub.start_worker([echo, explode])
    c = hub.client()
    ok = [c.schedule_new_orchestration(echo, input=i, instance_id=unique_id("ok")) for i in range(completed)]
    bad = [c.schedule_new_orchestration(explode, input=i, instance_id=unique_id("bad")) for i in range(failed)]
    for iid in ok + bad:
        state = c.wait_for_orchestration_completion(iid, timeout=60)
        assert state is not None and state.runtime_status in (
            client.OrchestrationStatus.COMPLETED,
            client.OrchestrationStatus.FAILED,
        )
    return ok, bad


def _range() -> list[str]:
    now = datetime.now(timezone.utc)
    return ["--since", (now - timedelta(hours=1)).isoformat(), "--until", (now + timedelta(hours=1)).isoformat()]


def exported_files(folder: Path) -> dict[str, Path]:
    """Exported files by the instance ID in their header (each ID must appear once)."""
    found: dict[str, Path] = {}
    for path in folder.rglob("*.jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            header = json.loads(stream.readline())
        assert header["kind"] == "metadata" and header["schema_version"] == "1.0"
        assert header["instance_id"] not in found, f"{header['instance_id']} exported twice"
        found[header["instance_id"]] = path
    return found


def test_export_failed_to_folder_then_render_a_file(hub: Hub, tmp_path: Path) -> None:
    ok, bad = _finish(hub, completed=4, failed=3)
    out_dir, rng = tmp_path / "histories", _range()
    code, out, err = _run(hub, "--json", "export", *rng, "--status", "failed", "--to", str(out_dir),
                          "--prefix", "ops/failed")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert (result["exported"], result["exported_total"], result["matching"]) == (3, 3, 3)
    assert result["failed"] == [] and result["complete"] is True and result["statuses"] == ["FAILED"]
    assert err == ""  # no progress in --json mode
    files = exported_files(out_dir)
    assert set(files) == set(bad)
    assert all(p.parent == out_dir / "ops" / "failed" for p in files.values())

    # The same command again finds its checkpoint complete: nothing is written twice.
    code, out, _ = _run(hub, "--json", "export", *rng, "--status", "failed", "--to", str(out_dir),
                        "--prefix", "ops/failed")  # fmt: skip
    assert code == 0 and json.loads(out)["exported"] == 0 and json.loads(out)["exported_total"] == 3
    assert set(exported_files(out_dir)) == set(bad)

    # Every terminal instance, in text mode, with plain progress lines on stderr (no terminal, no bar).
    every = tmp_path / "every"
    code, out, err = _run(hub, "export", *rng, "--to", str(every))
    assert code == 0, err
    assert out.startswith(f"exported 7 instance(s) to {every}") and "7 of 7 matching exported in all, 0 failed" in out
    assert err.splitlines()[-1].startswith("exported 7/7 (7 this run, 0 failed)")
    assert set(exported_files(every)) == set(ok + bad)

    # The exported file renders as the live history does, in text and JSON.
    for flags in ([], ["--json"]):
        live = _run(hub, *flags, "history", bad[0])
        offline = _run(hub, *flags, "history", "--from-export", str(files[bad[0]]))
        assert live[0] == offline[0] == 0, offline[2]
        assert offline[1] == live[1]
    assert "ExecutionCompleted" in offline[1] and "bad order 0" in offline[1]


def test_export_bad_input_gets_clear_errors(hub: Hub, tmp_path: Path) -> None:
    to = ["--to", str(tmp_path / "x")]
    code, _, err = _run(hub, "export", "--since", "2026-02-01T00:00:00Z", "--until", "2026-01-01T00:00:00Z", *to)
    assert code == 2 and "--until (2026-01-01T00:00:00+00:00) must be later than --since" in err
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--status", "broken", *to)
    assert code == 2 and "unknown status 'broken'" in err
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--status", "running", *to)
    assert code == 2 and "--status RUNNING is not terminal" in err
    code, _, err = _run(hub, "export", "--since", "yesterday", *to)
    assert code == 2 and "--since must be an ISO 8601 time" in err
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--page-size", "0", *to)
    assert code == 2 and "--page-size must be between 1 and 1000, got 0" in err
    unreachable = "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/a;"
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--to", "exports", "--blob-connection-string",
                        unreachable)  # fmt: skip
    assert code == 1 and "cannot reach blob container 'exports' at http://127.0.0.1:1/a/exports" in err
    assert len(err.splitlines()) == 1
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--to", "Bad_Name", "--blob-connection-string",
                        unreachable)  # fmt: skip
    assert code == 2 and "--to 'Bad_Name' is not a valid blob container name" in err
    (tmp_path / "file").write_text("x")
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--to", str(tmp_path / "file"))
    assert code == 1 and "exists and is not a folder" in err

    code, _, err = _run(hub, "export", "--since", "2026-01-01", *to, "--timeout", "5")
    assert code == 2 and "--timeout: only with --job" in err
    code, _, err = _run(hub, "export", "--since", "2026-01-01", *to, "--job", "--restart")
    assert code == 2 and "--restart: not with --job" in err

    cp = ["--checkpoint", str(tmp_path / "cp.json")]
    assert _run(hub, "export", "--since", "2026-01-01", "--status", "failed", *to, *cp)[0] == 0
    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--status", "completed", *to, *cp)
    assert code == 2 and f"checkpoint {tmp_path / 'cp.json'} belongs to another export" in err

    code, _, err = _run(hub, "export", "--since", "2026-01-01", "--to", "jobs", "--job", "--timeout", "1")
    assert code == 1 and "no worker took up export job" in err and "register_worker" in err

    code, _, err = _run(hub, "history", "--from-export", str(tmp_path / "missing.jsonl.gz"))
    assert code == 1 and "missing.jsonl.gz: no such file" in err
    (tmp_path / "junk.jsonl.gz").write_bytes(gzip.compress(b'{"kind": "metadata"}\n{"event_type": "Nope"}\n'))
    code, _, err = _run(hub, "history", "--from-export", str(tmp_path / "junk.jsonl.gz"))
    assert code == 1 and "is not a readable exported history" in err and len(err.splitlines()) == 1
    code, _, err = _run(hub, "history")
    assert code == 2 and "give an instance ID, or --from-export FILE" in err


GATED_CLI = Path(__file__).with_name("gated_cli.py")


def _interrupt(hub: Hub, argv: list[str], sig: signal.Signals) -> tuple[int, str, str]:
    """Starts the export, sends ``sig`` once it reports its first instance done; returns (code, first line, rest).

    The export waits after that line until its stdin closes (see gated_cli.py), so the signal lands there: sent
    after a line it had already left behind, it came too late on a loaded machine, once all 40 were exported.
    """
    proc = subprocess.Popen([sys.executable, str(GATED_CLI), *hub.cli_args(), *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(hub))  # fmt: skip
    assert proc.stdin is not None and proc.stderr is not None
    first = proc.stderr.readline()  # printed after an instance is written and checkpointed
    proc.send_signal(sig)
    # Lets a held export go on: Ctrl-C may reach another thread than the waiting one, and Python then raises
    # KeyboardInterrupt in the main thread as soon as its wait ends, before the export gets any further.
    proc.stdin.close()
    rest = proc.stderr.read()
    proc.stderr.close()
    return proc.wait(timeout=60), first, rest


def test_export_resumes_after_an_interrupt_and_a_kill_without_duplicates(hub: Hub, tmp_path: Path) -> None:
    ok, _ = _finish(hub, completed=40, failed=0)
    out_dir = tmp_path / "out"
    argv = ["export", *_range(), "--to", str(out_dir), "--page-size", "4", "--parallel", "1"]

    code, first, rest = _interrupt(hub, argv, signal.SIGINT)  # Ctrl-C: stops after the instances in flight
    assert first.startswith("exported 1/40 "), first
    assert code == 130 and rest.endswith("interrupted; run the same command again to resume\n"), rest
    after_interrupt = exported_files(out_dir)
    assert 1 <= len(after_interrupt) < 40

    code, first, _ = _interrupt(hub, argv, signal.SIGKILL)  # killed outright: the checkpoint is all that is left
    # An instance written but not yet checkpointed when Ctrl-C came is exported again, into the same file.
    assert code == -signal.SIGKILL and "(1 this run, 0 failed)" in first, first
    assert len(after_interrupt) <= len(exported_files(out_dir)) < 40

    code, out, err = _run(hub, "--json", *argv)
    assert code == 0, err
    result = json.loads(out)
    assert result["runs"] == 3 and result["complete"] is True
    assert result["exported_total"] == 40 and result["exported"] < 40
    assert set(exported_files(out_dir)) == set(ok)  # each instance once, none missing


def test_export_until_defaults_to_now_and_a_rerun_resumes_that_range(hub: Hub, tmp_path: Path) -> None:
    _finish(hub, completed=3, failed=0)
    since = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    code, out, err = _run(hub, "--json", "export", "--since", since, "--to", str(tmp_path))
    assert code == 0, err
    first = json.loads(out)
    assert first["exported"] == 3 and first["until"] > since
    checkpoint = json.loads(Path(first["checkpoint"]).read_text())
    assert checkpoint["complete"] is True and checkpoint["until"] == first["until"]
    # Unfinished (as a kill leaves it): without --until the run resumes the pinned range; another --until is refused.
    path = Path(first["checkpoint"])
    path.write_text(json.dumps({**checkpoint, "complete": False, "exported": 0, "done_in_page": []}))
    code, _, err = _run(hub, "export", "--since", since, "--until", "2099-01-01T00:00:00Z", "--to", str(tmp_path))
    assert code == 2 and f"is an unfinished export up to --until {first['until']}" in err
    code, out, err = _run(hub, "--json", "export", "--since", since, "--to", str(tmp_path))
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["until"] == first["until"] and resumed["runs"] == 2 and resumed["exported"] == 3

    # Finished: the same command covers the range up to the new "now", rewriting the same files.
    code, out, err = _run(hub, "--json", "export", "--since", since, "--to", str(tmp_path))
    assert code == 0, err
    second = json.loads(out)
    assert second["until"] > first["until"] and second["exported"] == 3 and second["runs"] == 1
    assert len(exported_files(tmp_path)) == 3

    # Through a connection string, the checkpoint names the task hub and keeps the credentials out.
    argv = ["--connection-string", hub.connection_string(), "--json", "export", "--since", since, "--to",
            str(tmp_path / "cs")]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "durabletask.cli", *argv], capture_output=True, text=True,
                          timeout=120, env=_env(hub))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    source = json.loads(Path(json.loads(proc.stdout)["checkpoint"]).read_text())["parameters"]["source"]
    assert source.endswith(f"/{hub.taskhub}") and "Authentication" not in source


def test_export_job_is_created_and_followed(hub: Hub, tmp_path: Path) -> None:
    from durabletask.extensions.history_export import ExportHistoryClient, LocalFolderHistoryWriter

    w = hub.worker()
    w.add_orchestrator(echo)
    w.add_orchestrator(explode)
    ExportHistoryClient(hub.client(), LocalFolderHistoryWriter(tmp_path)).register_worker(w)
    w.start()
    c = hub.client()
    bad = [c.schedule_new_orchestration(explode, input=i, instance_id=unique_id("jbad")) for i in range(3)]
    ok = c.schedule_new_orchestration(echo, input=1, instance_id=unique_id("jok"))
    for iid in [*bad, ok]:
        assert c.wait_for_orchestration_completion(iid, timeout=60) is not None

    code, out, err = _run(hub, "export", *_range(), "--status", "failed", "--to", "jobs", "--prefix", "p",
                          "--job", "--job-id", "cli-job", "--page-size", "2", "--timeout", "90")  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0] == "created export job cli-job (orchestration export-job-cli-job)"
    assert out.splitlines()[-1] == "job cli-job: COMPLETED scanned 3 exported 3 failed 0"
    assert "job cli-job: ACTIVE" in err or "job cli-job: COMPLETED" in err  # progress lines on stderr
    assert set(exported_files(tmp_path / "jobs" / "p")) == set(bad)

    code, _, err = _run(hub, "export", *_range(), "--to", "jobs", "--job", "--blob-connection-string", "x")
    assert code == 2 and "--job writes through the worker's writer" in err


def _stderr_on_a_terminal(hub: Hub, *argv: str) -> tuple[int, str]:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    proc = subprocess.Popen(_argv(hub, *argv), stdout=subprocess.DEVNULL, stderr=follower, env=_env(hub))
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_export_progress_bar_on_a_terminal_and_none_when_asked(hub: Hub, tmp_path: Path) -> None:
    _finish(hub, completed=5, failed=0)
    code, shown = _stderr_on_a_terminal(hub, "export", *_range(), "--to", str(tmp_path / "bar"))
    assert code == 0, shown
    assert "exporting: 100%" in shown and "5/5" in shown and "failed=0" in shown  # tqdm's bar
    assert "exported 1/5" not in shown
    code, shown = _stderr_on_a_terminal(hub, "export", *_range(), "--to", str(tmp_path / "quiet"), "--no-progress")
    assert (code, shown) == (0, "")
