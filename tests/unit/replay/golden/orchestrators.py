"""The orchestrators whose recorded histories live next to this file (as their current code)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from durabletask import task


def order_pipeline(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    """A three-step chain: reserve, charge, ship."""
    reservation = yield ctx.call_activity("reserve_stock", input=order["sku"])
    receipt = yield ctx.call_activity("charge_card", input={"amount": order["amount"]})
    tracking = yield ctx.call_activity("ship", input=[reservation, receipt])
    return {"tracking": tracking}


def approval_with_deadline(ctx: task.OrchestrationContext, request_id: str) -> Any:
    """Fan out notifications, then wait for an approval racing a deadline timer."""
    yield task.when_all([ctx.call_activity("notify", input=who) for who in ("alice", "bob")])
    ctx.set_custom_status({"waiting_for": request_id})
    approval = ctx.wait_for_external_event("Approved")
    deadline = ctx.create_timer(timedelta(hours=1))
    winner = yield task.when_any([approval, deadline])
    if winner is deadline:
        return "expired"
    deadline.cancel()
    return {"approved_by": approval.get_result()}


def flaky_with_retries(ctx: task.OrchestrationContext, _: Any) -> Any:
    """An activity retried with exponential backoff until it succeeds."""
    policy = task.RetryPolicy(first_retry_interval=timedelta(seconds=5), max_number_of_attempts=4,
                              backoff_coefficient=2.0)
    return (yield ctx.call_activity("flaky", input=1, retry_policy=policy))


def order_pipeline_v2(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    """``order_pipeline`` after an incompatible edit: the charge activity was renamed."""
    reservation = yield ctx.call_activity("reserve_stock", input=order["sku"])
    receipt = yield ctx.call_activity("charge_payment", input={"amount": order["amount"]})
    tracking = yield ctx.call_activity("ship", input=[reservation, receipt])
    return {"tracking": tracking}


order_pipeline_v2.__name__ = "order_pipeline"

#: The code each golden file replays against.
CODE: dict[str, Any] = {
    "order_pipeline_completed.json": order_pipeline,
    "approval_with_deadline.json": approval_with_deadline,
    "flaky_with_retries.json": flaky_with_retries,
    "order_pipeline_renamed_activity.json": order_pipeline_v2,
}
