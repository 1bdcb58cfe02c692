"""Human interaction: a purchase waits for a manager's approval; without an answer in time it escalates.

Two requests run: one approved promptly by its manager, one where the manager stays silent, the request
escalates to a director, and the director approves it. Timeouts are durable timers, so a worker restart
during the wait changes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from _support import Runtime, parse_args, wait_for_custom_status

from durabletask import client, task

APPROVAL_TIMEOUT = timedelta(seconds=2)


def notify(ctx: task.ActivityContext, message: str) -> str:
    print(f"  [notify] {message}")
    return message


def purchase_approval(ctx: task.OrchestrationContext, request: dict[str, Any]) -> Any:
    yield ctx.call_activity(notify, input=f"{request['manager']}: please approve {request['item']}")
    ctx.set_custom_status({"waiting_for": request["manager"]})
    try:
        decision = yield ctx.wait_for_external_event("Approval", timeout=APPROVAL_TIMEOUT)
        return {"approved_by": request["manager"], "decision": decision}
    except TimeoutError:
        pass
    # No answer in time: escalate and wait for the director, this time without a deadline.
    yield ctx.call_activity(notify, input=f"director: {request['item']} needs approval (escalated)")
    ctx.set_custom_status({"waiting_for": "director", "escalated": True})
    decision = yield ctx.wait_for_external_event("Approval")
    return {"approved_by": "director", "decision": decision, "escalated": True}


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(purchase_approval)
        w.add_activity(notify)
        w.start()
        c = rt.client()
        prompt = c.schedule_new_orchestration(purchase_approval, input={"item": "laptop", "manager": "alice"})
        silent = c.schedule_new_orchestration(purchase_approval, input={"item": "server", "manager": "bob"})
        wait_for_custom_status(c, prompt, "alice")
        c.raise_orchestration_event(prompt, "Approval", data="yes")
        wait_for_custom_status(c, silent, "director")
        c.raise_orchestration_event(silent, "Approval", data="yes, go ahead")
        ok = True
        for instance_id in (prompt, silent):
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
            print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
            ok = ok and state.runtime_status == client.OrchestrationStatus.COMPLETED
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
