"""Run by Microsoft's SDK in the peer interpreter: a worker or a client using Microsoft's blob payload store.

Usage: peer_blob.py worker|client PORT TASKHUB CONNECTION_STRING CONTAINER
"""

import json
import sys

from durabletask import client, task, worker
from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

SIZE = 400 * 1024


def xsdk_double(ctx: task.ActivityContext, value: str) -> str:
    return value + value


def xsdk_orch(ctx: task.OrchestrationContext, value: str):  # type: ignore[no-untyped-def]
    doubled = yield ctx.call_activity(xsdk_double, input=value)
    return doubled


def main() -> None:
    mode, port, taskhub, connection, container = sys.argv[1:6]
    store = BlobPayloadStore(BlobPayloadStoreOptions(connection_string=connection, container_name=container))
    address, metadata = f"localhost:{port}", [("taskhub", taskhub)]
    if mode == "worker":
        w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata, payload_store=store)
        w.add_orchestrator(xsdk_orch)
        w.add_activity(xsdk_double)
        w.start()
        print("ready", flush=True)
        sys.stdin.read()
        w.stop()
        return
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata, payload_store=store)
    iid = c.schedule_new_orchestration("xsdk_orch", input="m" * SIZE)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    raw = client.TaskHubGrpcClient(host_address=address, metadata=metadata).get_orchestration_state(iid)
    print(
        json.dumps(
            {
                "status": state.runtime_status.name,
                "output_ok": json.loads(state.serialized_output) == "m" * SIZE * 2,
                "raw_input": raw.serialized_input[:8],
            }
        ),
        flush=True,
    )


main()
