"""Run by Microsoft's SDK in the peer interpreter: its worker runs the first release of ``order`` until each instance
waits on its timer, then its export serializer writes each running instance's history into a folder, in both
formats (its exporter job takes only finished instances).

Usage: replay_recorder.py ADDRESS TASKHUB FOLDER INSTANCE_ID... ; prints one JSON line {instance_id: [paths]}.
"""

import json
import os
import sys
import time
from datetime import timedelta

from durabletask import client, task, worker
from durabletask.extensions.history_export.models import ExportFormat, ExportFormatKind
from durabletask.extensions.history_export.serialization import (
    file_extension_for,
    orchestration_state_to_dict,
    serialize_history,
)


def reserve(ctx: task.ActivityContext, sku: str) -> str:
    return f"res-{sku}"


def order(ctx: task.OrchestrationContext, data: dict) -> object:  # type: ignore[type-arg]
    # The same calls as tests/e2e/replay_check_app.py's order_v1.
    reservation = yield ctx.call_activity(reserve, input=data["sku"])
    ctx.set_custom_status("waiting")
    yield ctx.create_timer(timedelta(hours=1))
    return reservation


def main() -> None:
    address, taskhub, folder, *ids = sys.argv[1:]
    metadata = [("taskhub", taskhub)]
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata)
    w.add_orchestrator(order)
    w.add_activity(reserve)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata)
    try:
        for iid in ids:
            c.schedule_new_orchestration(order, input={"sku": "lamp"}, instance_id=iid)
        for iid in ids:
            deadline = time.monotonic() + 60
            while c.get_orchestration_state(iid).serialized_custom_status != '"waiting"':
                if time.monotonic() > deadline:
                    raise SystemExit(f"{iid} never reached its timer")
                time.sleep(0.05)
    finally:
        w.stop()
    os.makedirs(folder, exist_ok=True)
    paths: dict[str, list[str]] = {}
    for iid in ids:
        events = c.get_orchestration_history(iid)
        metadata = orchestration_state_to_dict(c.get_orchestration_state(iid))
        for kind in (ExportFormatKind.JSON, ExportFormatKind.JSONL_GZIP):
            fmt = ExportFormat(kind=kind)
            path = os.path.join(folder, f"{iid}-{kind.value}{file_extension_for(fmt)}")
            with open(path, "wb") as out:
                out.write(serialize_history(events, instance_id=iid, fmt=fmt, metadata=metadata))
            paths.setdefault(iid, []).append(path)
    print(json.dumps(paths))


if __name__ == "__main__":
    main()
