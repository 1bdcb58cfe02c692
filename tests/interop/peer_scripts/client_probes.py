"""Small probes of client and worker behaviour, run unchanged under either SDK; each prints one JSON line.

Usage: ``python client_probes.py PROBE [ADDRESS TASKHUB [OPTION]]``. Only the public API both packages share is
used, except where a probe says it reads a private attribute both SDKs have (``_logger``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from durabletask import client, task, worker

INVOCATIONS = Path(os.environ.get("PROBE_COUNTER", "/nonexistent"))


def probe_echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def probe_step(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def probe_chain(ctx: task.OrchestrationContext, _: Any) -> Any:
    # Appends one line per call of this function: how often the SDK invokes the orchestrator.
    with INVOCATIONS.open("a") as out:
        out.write("x\n")
    total = 0
    for _ in range(3):
        total = yield ctx.call_activity(probe_step, input=total)
    return total


def _client(address: str, taskhub: str, **kwargs: Any) -> Any:
    return client.TaskHubGrpcClient(host_address=address, metadata=[("taskhub", taskhub)], **kwargs)


@contextmanager
def _worker(make: Callable[[], Any], *orchestrators: Any, activities: tuple[Any, ...] = ()) -> Iterator[Any]:
    w = make()
    for fn in orchestrators:
        w.add_orchestrator(fn)
    for fn in activities:
        w.add_activity(fn)
    w.start()
    try:
        yield w
    finally:
        w.stop()


def _plain_worker(address: str, taskhub: str, **kwargs: Any) -> Callable[[], Any]:
    return lambda: worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)], **kwargs)


def loop(address: str, taskhub: str) -> Any:
    """A sync client used from inside a running event loop, as in a FastAPI handler."""

    async def handler() -> Any:
        c = _client(address, taskhub)
        try:
            iid = c.schedule_new_orchestration("probe_nobody_runs", instance_id=f"loop-{time.time_ns()}")
            state = c.get_orchestration_state(iid)
            return {"status": state.runtime_status.name if state else None}
        except Exception as exc:  # the result to compare is whether it raised
            return {"raised": type(exc).__name__}
        finally:
            c.close()

    return asyncio.run(handler())


def tags(address: str, taskhub: str) -> Any:
    """What a caller sees of the tags it passed (and of none), in the state and in the history."""
    c = _client(address, taskhub)
    out: dict[str, Any] = {}
    with _worker(_plain_worker(address, taskhub), probe_echo):
        for label, given in (("tagged", {"team": "ops", "tier": "1"}), ("untagged", None)):
            iid = c.schedule_new_orchestration(probe_echo, input=1, instance_id=f"{label}-{time.time_ns()}", tags=given)
            state = c.wait_for_orchestration_completion(iid, timeout=30)
            history = c.get_orchestration_history(iid)
            out[label] = {
                "state_tags": getattr(state, "tags", "<no such attribute>"),
                "history_tags": [e.tags for e in history if type(e).__name__ == "ExecutionStartedEvent"],
            }
    c.close()
    return out


def _describe_logger(log: logging.Logger) -> dict[str, Any]:
    return {
        "name": log.name,
        "level": log.level,
        "in_hierarchy": log.name in logging.Logger.manager.loggerDict,
        "propagate": log.propagate,
        "handlers": [
            [type(h).__name__, h.level, getattr(h.formatter, "_fmt", None), getattr(h.formatter, "datefmt", None)]
            for h in log.handlers
        ],
    }


def _constructors() -> dict[str, Callable[..., Any]]:
    from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient, DurableTaskSchedulerClient
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    dts = {"host_address": "localhost:1", "taskhub": "hub", "token_credential": None}
    return {
        "client": lambda **kw: client.TaskHubGrpcClient(**kw),
        "async_client": lambda **kw: client.AsyncTaskHubGrpcClient(**kw),
        "worker": lambda **kw: worker.TaskHubGrpcWorker(**kw),
        "dts_client": lambda **kw: DurableTaskSchedulerClient(**dts, **kw),
        "dts_async_client": lambda **kw: AsyncDurableTaskSchedulerClient(**dts, **kw),
        "dts_worker": lambda **kw: DurableTaskSchedulerWorker(**dts, **kw),
    }


def logs() -> Any:
    """Each class's default logger (both SDKs keep it in ``_logger``) and the warnings of the deprecated keywords."""

    async def build() -> Any:
        out: dict[str, Any] = {}
        for name, make in _constructors().items():
            default = make()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                make(log_handler=logging.NullHandler())
                make(log_formatter=logging.Formatter("%(message)s"))
                make(logger=logging.getLogger("probe"))
            out[name] = {
                "default": _describe_logger(default._logger),
                "warnings": [
                    [w.category.__name__, Path(w.filename).name, "log_handler" in str(w.message)] for w in caught
                ],
            }
        return out

    return asyncio.run(build())


def _outcome(c: Any, iid: str) -> str:
    try:
        state = c.wait_for_orchestration_completion(iid, timeout=5)
    except TimeoutError:
        return "still PENDING after 5 s"
    return str(state.runtime_status.name) if state else "missing"


def channel(address: str, taskhub: str) -> Any:
    """Workers and clients given ``channel=`` together with a task hub, metadata or interceptors."""
    import grpc

    from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient, DurableTaskSchedulerClient
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    dts = {"host_address": f"http://{address}", "taskhub": taskhub, "token_credential": None, "secure_channel": False}
    reader = DurableTaskSchedulerClient(**dts)
    out: dict[str, Any] = {}
    workers: dict[str, Callable[[], Any]] = {
        "dts_worker": lambda: DurableTaskSchedulerWorker(**dts, channel=grpc.insecure_channel(address)),
        "plain_worker_with_metadata": _plain_worker(address, taskhub, channel=grpc.insecure_channel(address)),
    }
    for label, make in workers.items():
        with _worker(make, probe_echo):
            iid = reader.schedule_new_orchestration(probe_echo, input=1, instance_id=f"{label}-{time.time_ns()}")
            out[label] = _outcome(reader, iid)
    sender = DurableTaskSchedulerClient(**dts, channel=grpc.insecure_channel(address))
    iid = sender.schedule_new_orchestration("probe_nobody_runs", instance_id=f"sync-client-{time.time_ns()}")
    out["dts_client_start_is_in_the_named_hub"] = reader.get_orchestration_state(iid) is not None

    async def async_client() -> Any:
        try:
            made = AsyncDurableTaskSchedulerClient(**dts, channel=grpc.aio.insecure_channel(address))
        except ValueError:
            return "refused with ValueError"
        iid = await made.schedule_new_orchestration("probe_nobody_runs", instance_id=f"async-{time.time_ns()}")
        return "started in the named hub" if reader.get_orchestration_state(iid) else "started in another hub"

    out["dts_async_client"] = asyncio.run(async_client())
    reader.close()
    return out


def invocations(address: str, taskhub: str, sessions: str = "default") -> Any:
    """How many times the worker calls an orchestrator function that runs three activities one after another."""
    options: dict[str, Any] = {}
    if sessions == "off":  # our SDK only: extended sessions turned off
        options["extended_sessions"] = worker.ExtendedSessionOptions(max_cached_orchestrations=0)  # type: ignore[attr-defined]
    c = _client(address, taskhub)
    with _worker(_plain_worker(address, taskhub, **options), probe_chain, activities=(probe_step,)):
        iid = c.schedule_new_orchestration(probe_chain, instance_id=f"chain-{time.time_ns()}")
        state = c.wait_for_orchestration_completion(iid, timeout=30)
    turns = [type(e).__name__ for e in c.get_orchestration_history(iid)].count("OrchestratorStartedEvent")
    c.close()
    calls = len(INVOCATIONS.read_text().split())
    return {"output": state.get_output() if state else None, "turns": turns, "calls": calls}


def probe_failing_activity(ctx: task.ActivityContext, _: Any) -> None:
    raise ValueError("activity boom")


def probe_calls_failing_activity(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity(probe_failing_activity))


def probe_calls_missing_activity(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity("probe_no_such_activity"))


def probe_raising(ctx: task.OrchestrationContext, _: Any) -> Any:
    raise ValueError("orchestrator boom")


def probe_raises_on_replay(ctx: task.OrchestrationContext, _: Any) -> Any:
    if ctx.is_replaying:
        raise ValueError("replay boom")
    return (yield ctx.call_activity(probe_step, input=1))


def probe_failing_entity(ctx: Any, _: Any) -> Any:
    if ctx.operation == "fail":
        raise ValueError("entity boom")
    return None


def probe_calls_entity(ctx: task.OrchestrationContext, name: str) -> Any:
    from durabletask.entities import EntityInstanceId

    return (yield ctx.call_entity(EntityInstanceId(name, "k"), "fail"))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self, *marks: str) -> list[Any]:
        """The records naming one of ``marks`` (in the message or the traceback), then forget all."""
        out = []
        for record in self.records:
            text = record.getMessage()
            trace = logging.Formatter().formatException(record.exc_info) if record.exc_info else ""
            if any(mark in text or mark in trace for mark in marks):
                error = record.exc_info[1] if record.exc_info else None
                out.append([record.levelname, type(error).__name__ if error is not None else None, text])
        self.records.clear()
        return out


def failure_logs(address: str, taskhub: str, sessions: str = "default") -> Any:
    """What the worker logs at INFO and above for each kind of failure: the records naming the instance or the error."""
    logging.disable(logging.NOTSET)
    records = _Records()
    log = logging.Logger("probe-worker", logging.INFO)
    log.addHandler(records)
    options: dict[str, Any] = {"logger": log}
    if sessions == "off":  # our SDK only: every turn replays, as in Microsoft's
        options["extended_sessions"] = worker.ExtendedSessionOptions(max_cached_orchestrations=0)  # type: ignore[attr-defined]
    make = _plain_worker(address, taskhub, **options)
    c = _client(address, taskhub)
    cases: list[tuple[str, Any, Any]] = [
        ("activity", probe_calls_failing_activity, None),
        ("missing_activity", probe_calls_missing_activity, None),
        ("orchestrator", probe_raising, None),
        ("replay", probe_raises_on_replay, None),
        ("entity", probe_calls_entity, "probe_failing_entity"),
        ("missing_entity", probe_calls_entity, "probe_no_such_entity"),
        ("missing_orchestrator", "probe_no_such_orchestrator", None),
    ]
    out: dict[str, Any] = {}
    orchestrators = dict.fromkeys(fn for _, fn, _ in cases if callable(fn))
    w = make()
    w.add_entity(probe_failing_entity)
    with _worker(lambda: w, *orchestrators, activities=(probe_failing_activity, probe_step)):
        for label, fn, arg in cases:
            iid = f"{label}-{time.time_ns()}"
            c.schedule_new_orchestration(fn, input=arg, instance_id=iid)
            state = c.wait_for_orchestration_completion(iid, timeout=30)
            status = state.runtime_status.name if state else None
            out[label] = {"status": status, "records": records.take(iid, "boom", "probe_no_such")}
    c.close()
    return out


def main(argv: list[str]) -> int:
    probe, *args = argv
    probes: dict[str, Callable[..., Any]] = {
        "loop": loop,
        "tags": tags,
        "logs": logs,
        "channel": channel,
        "invocations": invocations,
        "failure_logs": failure_logs,
    }
    logging.disable(logging.CRITICAL)  # the SDKs' INFO lines go to stderr; keep the output to the one JSON line
    print(json.dumps(probes[probe](*args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
