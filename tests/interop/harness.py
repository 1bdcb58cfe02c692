"""The harness of the interop scenarios: clients, workers and worker processes for either SDK and backend.

Imported by the pytest process (our SDK) and by the peer process (Microsoft's SDK) alike, so it uses only the
public API both packages share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from durabletask import client, worker

if __package__:
    from tests.support import endpoint

    from . import scenarios as sc
else:  # the peer imports these folders' modules as top-level ones, never through the repository root
    import endpoint  # type: ignore[no-redef,import-not-found]
    import scenarios as sc  # type: ignore[no-redef,import-not-found]

DRIVER = Path(__file__).resolve().parent / "peer_scripts" / "driver.py"
WAIT = 20.0  # generous for a loaded machine, short enough that a broken backend fails the suite quickly


class Harness:
    """Where a scenario talks, and how it gets clients, workers and separate worker processes.

    ``mode`` is ``dts`` (the task-hub-aware DurableTaskScheduler classes, with the credential and TLS the test
    run asks for) or ``grpc`` (the plain ones). On an external backend the clients and workers record what they
    make, and :func:`open_harness` removes it at the end.
    """

    def __init__(
        self, mode: str, address: str, taskhub: str, child_env: dict[str, str], child_cwd: str, stack: ExitStack
    ) -> None:
        self.mode, self.address, self.taskhub = mode, address, taskhub
        self.child_env, self.child_cwd = child_env, child_cwd
        self.stack = stack
        self.prefix = f"io-{uuid.uuid4().hex[:10]}"
        self.workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="interop-"))
        self.made = endpoint.Made() if os.environ.get(endpoint.BACKEND_ENV) else None

    def _recording(self) -> list[Any]:
        return [self.made.interceptor()] if self.made is not None else []

    def new_id(self, label: str) -> str:
        return f"{self.prefix}-{label}"

    def client(self) -> Any:
        if self.mode == "dts":
            from durabletask.azuremanaged.client import DurableTaskSchedulerClient

            made: Any = DurableTaskSchedulerClient(
                host_address=self.address,
                taskhub=self.taskhub,
                token_credential=endpoint.credential(),
                secure_channel=False,
                interceptors=self._recording(),
            )
        else:
            made = client.TaskHubGrpcClient(host_address=self.address)
        self.stack.callback(made.close)
        return made

    def worker(
        self,
        *,
        orchestrators: tuple[Callable[..., Any], ...] = (),
        activities: tuple[Callable[..., Any], ...] = (),
        entities: tuple[Callable[..., Any], ...] = (),
        configure: Callable[[Any], None] | None = None,
        **options: Any,
    ) -> Any:
        """A started worker with the given functions; ``options`` go to its constructor, ``configure`` runs
        before start."""
        if self.mode == "dts":
            from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

            made: Any = DurableTaskSchedulerWorker(
                host_address=self.address,
                taskhub=self.taskhub,
                token_credential=endpoint.credential(),
                secure_channel=False,
                interceptors=self._recording(),
                **options,
            )
        else:
            made = worker.TaskHubGrpcWorker(host_address=self.address, **options)
        for fn in orchestrators:
            made.add_orchestrator(fn)
        for fn in activities:
            made.add_activity(fn)
        for fn in entities:
            made.add_entity(fn)
        if configure is not None:
            configure(made)
        made.start()
        self.stack.callback(made.stop)
        return made

    def spawn(
        self, role: str, python: str | None = None, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> WorkerProcess:
        """Start a worker of ``role`` in its own process: this interpreter and SDK unless ``python`` says otherwise."""
        args = [python or sys.executable, str(DRIVER), self.mode, self.address, self.taskhub, "serve", role]
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=self.child_env if env is None else env,
            cwd=cwd or self.child_cwd,
        )
        spawned = WorkerProcess(proc)
        self.stack.callback(spawned.stop)
        return spawned


class WorkerProcess:
    """A worker running in a child process until :meth:`stop` closes its stdin."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker process {proc.args!r} exited with {proc.wait(timeout=WAIT)}")
        self.pid = int(json.loads(line)["ready"])

    def stop(self) -> None:
        proc = self._proc
        if proc.returncode is not None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


# Worker processes for the multi-worker scenarios ------------------------------------------------------------------


def _versioning(version: str) -> Callable[[Any], None]:
    def configure(w: Any) -> None:
        w.use_versioning(
            worker.VersioningOptions(
                version=version,
                default_version=version,
                match_strategy=worker.VersionMatchStrategy.STRICT,
                failure_strategy=worker.VersionFailureStrategy.REJECT,
            )
        )

    return configure


def filtered(w: Any) -> None:
    w.use_work_item_filters()


ROLES: dict[str, dict[str, Any]] = {
    "specialist-a": {"activities": (sc.specialty_a,), "configure": filtered},
    "specialist-b": {"activities": (sc.specialty_b,), "configure": filtered},
    "version-1": {"orchestrators": (sc.versioned,), "configure": _versioning("1.0")},
    "version-2": {"orchestrators": (sc.versioned,), "configure": _versioning("2.0")},
    "handoff": {"orchestrators": (sc.handoff,), "activities": (sc.hello,)},
    "official-mix": {
        "orchestrators": (sc.chaining, sc.fan_out_fan_in, sc.approval),
        "activities": (sc.hello, sc.nap),
        "configure": filtered,
    },
}


def serve(harness: Harness, role: str) -> None:
    """Run one role's worker until stdin closes; the first stdout line announces readiness and the PID."""
    harness.worker(**ROLES[role])
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.read()


@contextmanager
def open_harness(mode: str, address: str, taskhub: str, child_env: dict[str, str], child_cwd: str) -> Iterator[Harness]:
    with ExitStack() as stack:
        h = Harness(mode, address, taskhub, child_env, child_cwd, stack)
        try:
            yield h
        finally:
            if h.made is not None:  # while the workers still run, so terminations are carried out
                h.made.remove(h.client())
