"""The demo's order workflow written with ``async def`` and ``await`` instead of a generator and ``yield``.

Each ``await`` of a durable task is replayed from history exactly like a ``yield``: the results are typed
(mypy sees ``reservation: str``), ``when_all``/``when_any`` compose as before, and a failed activity raises at
its ``await``. Two orders run: one whose customer asks for gift wrapping within the window, one that lets
the window's durable timer expire. A third orchestrator shows the one rule: an orchestrator awaits only
durable tasks; awaiting ``asyncio.sleep`` (or an HTTP client) fails it at once with a message saying so.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from _support import Runtime, parse_args, wait_for_custom_status

from durabletask import client, task

GIFT_WRAP_WINDOW = timedelta(seconds=1)


@dataclass
class Order:
    order_id: str
    items: list[str]
    amount: float


@dataclass
class Receipt:
    reservation: str
    payment: str
    shipments: list[str]
    gift_wrap: bool


def reserve_inventory(ctx: task.ActivityContext, order: Order) -> str:
    return f"reserved {len(order.items)} item(s) for {order.order_id}"


async def charge_payment(ctx: task.ActivityContext, order: Order) -> str:
    # Activities may do real async I/O (here a stand-in for a payment API call); orchestrators may not.
    await asyncio.sleep(0.01)
    return f"charged {order.amount:.2f} for {order.order_id}"


def ship(ctx: task.ActivityContext, item: str) -> str:
    return f"shipped {item}"


async def process_order(ctx: task.OrchestrationContext, order: Order) -> Receipt:
    reservation = await ctx.call_activity(reserve_inventory, input=order)
    payment = await ctx.call_activity(charge_payment, input=order)
    # Fan out one shipment per item, then fan in.
    shipments = await task.when_all([ctx.call_activity(ship, input=item) for item in order.items])
    # The customer may ask for gift wrapping until a durable timer ends the window; the loser of the race
    # needs no cancelling.
    ctx.set_custom_status("gift wrap window open")
    request = ctx.wait_for_external_event("gift_wrap", data_type=bool)
    first = await task.when_any([request, ctx.create_timer(GIFT_WRAP_WINDOW)])
    gift_wrap = first is request and request.get_result()
    ctx.set_custom_status("done")
    return Receipt(reservation, payment, shipments, gift_wrap)


async def impatient_order(ctx: task.OrchestrationContext, order: Order) -> str:
    await ctx.call_activity(reserve_inventory, input=order)
    await asyncio.sleep(5)  # wrong: not durable. Use `await ctx.create_timer(timedelta(seconds=5))`.
    return "never reached"


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        for orchestrator in (process_order, impatient_order):
            w.add_orchestrator(orchestrator)
        for activity in (reserve_inventory, charge_payment, ship):
            w.add_activity(activity)
        w.start()
        c = rt.client()
        wrapped = c.schedule_new_orchestration(process_order, input=Order("A-1001", ["book", "lamp"], 42.5))
        plain = c.schedule_new_orchestration(process_order, input=Order("A-1002", ["mug"], 9.9))
        wait_for_custom_status(c, wrapped, "gift wrap")
        c.raise_orchestration_event(wrapped, "gift_wrap", data=True)
        ok = True
        for instance_id in (wrapped, plain):
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
            print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
            ok = ok and state.runtime_status == client.OrchestrationStatus.COMPLETED
        bad = c.schedule_new_orchestration(impatient_order, input=Order("A-1003", ["pen"], 1.0))
        state = c.wait_for_orchestration_completion(bad, timeout=60)
        assert state is not None and state.failure_details is not None
        print(f"impatient_order: {state.runtime_status.name}: {state.failure_details.message.split('. ')[0]}")
        ok = ok and state.runtime_status == client.OrchestrationStatus.FAILED
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
