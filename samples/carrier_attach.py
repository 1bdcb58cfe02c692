"""Carrier-run attach after a crash: a new process finishes a crashed run without repeating completed work.

Run 1 (a separate process) attaches to instance ``review-run``, which reviews two files one after the
other. After the first review is recorded, run 1 is killed with SIGKILL while the second review is in
progress. Run 2, a fresh process with the same code and input, attaches to the same instance: the
fingerprint (name, version, input hash, code hash) matches, so it creates nothing new; replay reuses the first
review from history and only the second review runs again. Every completed review appears once in the ledger.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task

HERE = Path(__file__).resolve().parent
FILES = ["cart_total.py", "discount_price.py"]


def _ledger() -> Path:
    return Path(os.environ["REVIEW_LEDGER"])


def review_file(ctx: task.ActivityContext, name: str) -> str:
    if os.environ.get("REVIEW_HANG_ON") == name:
        time.sleep(3600)  # run 1 is killed while this review is in progress
    verdict = f"{name}: reviewed by pid {os.getpid()}"
    with _ledger().open("a") as ledger:
        ledger.write(json.dumps({"effect": f"review:{name}", "pid": os.getpid()}) + "\n")
    return verdict


def review_changed(ctx: task.OrchestrationContext, files: list[str]) -> Any:
    reviews = []
    for name in files:
        reviews.append((yield ctx.call_activity(review_file, input=name)))
    return reviews


def carrier_run(rt: Runtime, label: str) -> int:
    with rt.worker() as w:
        w.add_orchestrator(review_changed)
        w.add_activity(review_file)
        w.start()
        handle = rt.client().attach_orchestration(review_changed, instance_id="review-run", input=FILES)
        print(f"[{label}] pid {os.getpid()}: {handle.action.value} instance review-run", flush=True)
        print(f"[{label}] result: {handle.result(timeout=60)}", flush=True)
    return 0


def _read_ledger(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def main() -> int:
    args = parse_args(__doc__ or "", lambda p: p.add_argument("--carrier"))
    if args.carrier:
        return carrier_run(Runtime.from_args(args), args.carrier)
    with Runtime.from_args(args) as rt, tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger.jsonl"
        env = dict(os.environ, REVIEW_LEDGER=str(ledger))
        cmd = [sys.executable, str(HERE / "carrier_attach.py"), *rt.endpoint_args(), "--carrier"]
        run1 = subprocess.Popen([*cmd, "run-1"], env={**env, "REVIEW_HANG_ON": FILES[1]}, stdout=subprocess.PIPE,
                                text=True)
        assert run1.stdout is not None
        print(run1.stdout.readline().strip())
        deadline = time.monotonic() + 60
        while len(_read_ledger(ledger)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the second review is now in progress in run 1
        os.kill(run1.pid, signal.SIGKILL)
        run1.wait()
        print(f"[main] killed run 1 (pid {run1.pid}) with SIGKILL during the second review")

        run2 = subprocess.run([*cmd, "run-2"], env=env, capture_output=True, text=True, timeout=120)
        print(run2.stdout.strip())
        effects = _read_ledger(ledger)
        print("[main] ledger:", ", ".join(f"{e['effect']} (pid {e['pid']})" for e in effects))
        state = rt.client().get_orchestration_state("review-run")
        ok = (run2.returncode == 0 and state is not None
              and state.runtime_status == client.OrchestrationStatus.COMPLETED
              and sorted(e["effect"] for e in effects) == [f"review:{f}" for f in sorted(FILES)])
        print(f"[main] {'each review ran to completion exactly once' if ok else 'UNEXPECTED RESULT'}")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
