"""A small workflow on whichever ``durabletask`` SDK this interpreter has, against a DTS endpoint.

Run by the install tests with a venv's interpreter: ``--address HOST:PORT`` for an emulator in another process,
``--in-process`` to start ``dtscale_emulator.EmulatorServer`` in this one, beside the SDK's worker and client.
Prints one JSON line: the instance's outcome, which files the SDK was imported from, and the installed
distributions. Uses only the API that Microsoft's SDK and dtscale share.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from typing import Any

from durabletask import client, task, worker

DISTRIBUTIONS = ("durabletask", "durabletask-azuremanaged", "dtscale", "dtscale-emulator")


def hello(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello, {name}!"


def greetings(ctx: task.OrchestrationContext, names: list[str]) -> Any:
    greeted = []
    for name in names:
        greeted.append((yield ctx.call_activity(hello, input=name)))
    return greeted


def run(address: str, instance_id: str) -> dict[str, Any]:
    w = worker.TaskHubGrpcWorker(host_address=address)
    w.add_orchestrator(greetings)
    w.add_activity(hello)
    w.start()
    try:
        c = client.TaskHubGrpcClient(host_address=address)
        started = c.schedule_new_orchestration(greetings, input=["Tokyo", "Lima"], instance_id=instance_id)
        state = c.wait_for_orchestration_completion(started, timeout=60)
    finally:
        w.stop()
    assert state is not None
    return {
        "instance_id": state.instance_id,
        "status": state.runtime_status.name,
        "output": json.loads(state.serialized_output or "null"),
    }


def installed() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--address")
    where.add_argument("--in-process", action="store_true")
    parser.add_argument("--instance-id", required=True)
    args = parser.parse_args()
    if args.in_process:
        from dtscale_emulator import EmulatorServer

        server = EmulatorServer(port=0, in_memory=True).start()
        try:
            outcome = run(server.address, args.instance_id)
        finally:
            server.stop()
    else:
        outcome = run(args.address, args.instance_id)
    outcome.update(
        client_module=client.__file__,
        worker_module=worker.__file__,
        distributions=installed(),
        modules=sorted(m for m in sys.modules if m.startswith(("durabletask", "dtscale_emulator"))),
    )
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
