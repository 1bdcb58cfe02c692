"""Without OpenTelemetry installed, the SDK works as before and never imports it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import sys

    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoOpenTelemetry())

    from durabletask import client, task, worker
    from dtscale_emulator.server import EmulatorServer

    def double(ctx, value):
        return value * 2

    def chain(ctx, value):
        for _ in range(3):
            value = yield ctx.call_activity(double, input=value)
        return value

    server = EmulatorServer(port=0, in_memory=True)
    server.start()
    try:
        address = f"localhost:{server.port}"
        with worker.TaskHubGrpcWorker(host_address=address) as w:
            w.add_orchestrator(chain)
            w.add_activity(double)
            w.start()
            c = client.TaskHubGrpcClient(host_address=address)
            iid = c.schedule_new_orchestration(chain, input=1)
            c.raise_orchestration_event(iid, "ignored")
            state = c.wait_for_orchestration_completion(iid, timeout=60)
            print(state.runtime_status.name, state.serialized_output)
    finally:
        server.stop()
    loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry") or m == "durabletask._tracing.otel")
    print("loaded:", loaded)
    """
)


def test_the_sdk_runs_and_imports_no_opentelemetry_without_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == ["COMPLETED 8", "loaded: []"]
