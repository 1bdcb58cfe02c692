"""The ordering reproduction: a client raises numbered events back to back at an orchestration that takes one
per execution and continues as new with ``save_events=True``; it must see them in the order they were raised.

    python -m tests.system.interleavings.event_order --sdk ours|microsoft [--rounds 15] [--events 8]

runs rounds one after another (no interleaver: what it finds depends on the machine's load) and prints, as JSON,
how many rounds saw their events out of order, with the first such orders.
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

from durabletask import client

from . import rig


def order_round(c: client.TaskHubGrpcClient, events: int, timeout: float = 60.0) -> list[Any]:
    """One round: start, raise ``events`` events back to back, and return the values in the order seen."""
    instance_id = f"order-{uuid.uuid4().hex[:12]}"
    c.schedule_new_orchestration("collect", input={"n": events, "seen": [], "save": True}, instance_id=instance_id)
    for value in range(1, events + 1):
        c.raise_orchestration_event(instance_id, "e", data=value)
    state = c.wait_for_orchestration_completion(instance_id, timeout=timeout)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    return list(json.loads(state.serialized_output or "[]"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk", choices=rig.SDKS, default="ours")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--events", type=int, default=8)
    args = parser.parse_args()
    expected = list(range(1, args.events + 1))
    with rig.open_rig() as r:
        r.start_worker(args.sdk)
        seen = [order_round(r.client, args.events) for _ in range(args.rounds)]
    wrong = [s for s in seen if s != expected]
    print(json.dumps({"sdk": args.sdk, "rounds": args.rounds, "out_of_order": len(wrong), "examples": wrong[:3]}))


if __name__ == "__main__":
    main()
