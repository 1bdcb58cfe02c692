"""An application's orchestrators in three releases, for the replay-check tests (imported by the test process, and
by ``durabletask replay-check --worker replay_check_app:build_...`` run from this folder).

``build_v1`` is what the running instances were started with; ``build_compatible`` changes only what replay does
not compare (an activity's input); ``build_incompatible`` inserts a step before the durable timer each instance
waits on, in the parent and in its sub-orchestration.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from durabletask import task, worker


def reserve(ctx: task.ActivityContext, sku: str) -> str:
    return f"res-{sku}"


def validate(ctx: task.ActivityContext, order: Any) -> bool:
    return True


def order_v1(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    reservation = yield ctx.call_activity(reserve, input=order["sku"])
    ctx.set_custom_status("waiting")
    yield ctx.create_timer(timedelta(hours=1))
    return reservation


def order_compatible(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    reservation = yield ctx.call_activity(reserve, input=order["sku"].upper())
    ctx.set_custom_status("waiting")
    yield ctx.create_timer(timedelta(hours=1))
    return reservation


def order_incompatible(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    reservation = yield ctx.call_activity(reserve, input=order["sku"])
    yield ctx.call_activity(validate, input=order)  # the inserted step
    ctx.set_custom_status("waiting")
    yield ctx.create_timer(timedelta(hours=1))
    return reservation


def shipment_v1(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.set_custom_status("waiting")
    yield ctx.create_timer(timedelta(hours=1))
    return "shipped"


def shipment_incompatible(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity(validate, input=None)  # the inserted step
    yield ctx.create_timer(timedelta(hours=1))
    return "shipped"


def fulfil(ctx: task.OrchestrationContext, _: Any) -> Any:
    """A parent that waits on its sub-orchestration; its own code is the same in every release."""
    ctx.set_custom_status("waiting")
    return (yield ctx.call_sub_orchestrator("shipment", instance_id=f"{ctx.instance_id}-shipment"))


RELEASES = {
    "v1": (order_v1, shipment_v1),
    "compatible": (order_compatible, shipment_v1),
    "incompatible": (order_incompatible, shipment_incompatible),
}


def build(release: str, **options: Any) -> worker.TaskHubGrpcWorker:
    order, shipment = RELEASES[release]
    w = worker.TaskHubGrpcWorker(**options)
    w.add_orchestrator(order, name="order")
    w.add_orchestrator(shipment, name="shipment")
    w.add_orchestrator(fulfil)
    w.add_activity(reserve)
    w.add_activity(validate)
    return w


def build_compatible() -> worker.TaskHubGrpcWorker:
    return build("compatible")


def build_incompatible() -> worker.TaskHubGrpcWorker:
    return build("incompatible")


def started_worker() -> worker.TaskHubGrpcWorker:
    """Not what --worker wants: a worker already running."""
    w = build("v1")
    w.start()
    return w


not_a_worker = "just a string"
