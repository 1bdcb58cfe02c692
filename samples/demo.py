"""The Quick start demo: an order workflow on the embedded emulator, with its result and history summary.

Starts the emulator in-process (SQLite in memory), a worker that registers one orchestrator and three
activities, and a client that schedules the workflow, waits for it, and prints what happened.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker


@dataclass
class Order:
    order_id: str
    items: list[str]
    amount: float


def reserve_inventory(ctx: task.ActivityContext, order: Order) -> str:
    return f"reserved {len(order.items)} item(s) for {order.order_id}"


def charge_payment(ctx: task.ActivityContext, order: Order) -> str:
    return f"charged {order.amount:.2f} for {order.order_id}"


def ship(ctx: task.ActivityContext, item: str) -> str:
    return f"shipped {item}"


def process_order(ctx: task.OrchestrationContext, order: Order):  # type: ignore[no-untyped-def]
    reservation = yield ctx.call_activity(reserve_inventory, input=order)
    payment = yield ctx.call_activity(charge_payment, input=order)
    # Fan out one shipment per item, then fan in.
    shipments = yield task.when_all([ctx.call_activity(ship, input=item) for item in order.items])
    ctx.set_custom_status("done")
    return {"reservation": reservation, "payment": payment, "shipments": shipments}


def main() -> int:
    with EmulatorServer(port=0, in_memory=True) as server:
        address = f"localhost:{server.port}"
        print(f"emulator listening on {address} (in-memory SQLite)")
        with worker.TaskHubGrpcWorker(host_address=address) as w:
            w.add_orchestrator(process_order)
            for activity in (reserve_inventory, charge_payment, ship):
                w.add_activity(activity)
            w.start()
            c = client.TaskHubGrpcClient(host_address=address)
            order = Order(order_id="A-1001", items=["book", "lamp", "mug"], amount=42.5)
            instance_id = c.schedule_new_orchestration(process_order, input=order)
            print(f"scheduled process_order as instance {instance_id}")
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            if state is None:
                print("the instance was not found", file=sys.stderr)
                return 1
            print(f"status: {state.runtime_status.name}")
            print(f"custom status: {state.serialized_custom_status}")
            print(f"result: {state.serialized_output}")
            history = c.get_orchestration_history(instance_id)
            kinds = Counter(type(event).__name__ for event in history)
            print(f"history: {len(history)} events")
            for kind, count in sorted(kinds.items()):
                print(f"  {kind}: {count}")
            c.close()
            return 0 if state.runtime_status == client.OrchestrationStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main())
