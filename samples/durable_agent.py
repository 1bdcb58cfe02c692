"""A durable agent that collects documents from a customer: model and tools as activities, effect keys,
an approval wait, document signals, and cancellation with compensation.

The "model" is scripted (deterministic), so the sample runs anywhere; replace ``plan_next_step`` with a real
model call and nothing else changes. Every tool with an external effect carries a stable effect key, so a
retried or re-delivered activity never repeats the effect. Two cases run:

* ``agent-alice``: the agent plans, requests two documents, receives both as external signals (one of them
  twice: the duplicate is ignored), asks a human for approval, and files the case.
* ``agent-bob``: the customer cancels while the agent waits for documents; the agent withdraws its
  outstanding requests (compensation) and ends as cancelled.
"""

from __future__ import annotations

import threading
from typing import Any

from _support import Runtime, parse_args, wait_for_custom_status

from durabletask import client, task

# The external world: effects keyed by effect key. A real system would be an email service, a CRM, ...
LEDGER: dict[str, str] = {}
_LEDGER_LOCK = threading.Lock()
_MODEL_CALLS = {"count": 0}


class ModelOverloadedError(Exception):
    """A transient model failure: retried by the policy below."""


def _effect(key: str, description: str) -> str:
    with _LEDGER_LOCK:
        if key in LEDGER:
            return f"already done: {LEDGER[key]}"
        LEDGER[key] = description
        return description


def plan_next_step(ctx: task.ActivityContext, case: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: decide what to do next from what the case already has."""
    _MODEL_CALLS["count"] += 1
    if _MODEL_CALLS["count"] == 1:
        raise ModelOverloadedError("model overloaded, try again")  # shows retry by error class
    missing = [d for d in case["required"] if d not in case["received"]]
    if missing:
        return {"action": "request_documents", "documents": missing}
    if not case.get("approved"):
        return {"action": "ask_approval"}
    return {"action": "file_case"}


def request_document(ctx: task.ActivityContext, req: dict[str, str]) -> str:
    return _effect(req["effect_key"], f"emailed {req['customer']} for {req['document']}")


def withdraw_request(ctx: task.ActivityContext, req: dict[str, str]) -> str:
    return _effect(req["effect_key"], f"withdrew request for {req['document']} from {req['customer']}")


def file_case(ctx: task.ActivityContext, req: dict[str, Any]) -> str:
    return _effect(req["effect_key"], f"filed case for {req['customer']} with {sorted(req['documents'])}")


RETRY_MODEL = task.RetryPolicy(first_retry_interval=__import__("datetime").timedelta(milliseconds=200),
                               max_number_of_attempts=3)


def document_agent(ctx: task.OrchestrationContext, case: dict[str, Any]) -> Any:
    case = {**case, "received": [], "approved": False}
    key = ctx.instance_id  # effect keys derive from the instance, so they are stable across replays and retries
    while True:
        step = yield ctx.call_activity(plan_next_step, input=case, retry_policy=RETRY_MODEL)
        if step["action"] == "request_documents":
            yield task.when_all([ctx.call_activity(request_document, input={
                "customer": case["customer"], "document": d, "effect_key": f"{key}:request:{d}"})
                for d in step["documents"]])
            ctx.set_custom_status({"waiting_for": step["documents"]})
            while len(case["received"]) < len(case["required"]):
                doc = ctx.wait_for_external_event("document")
                cancel = ctx.wait_for_external_event("cancel")
                winner = yield task.when_any([doc, cancel])
                if winner == cancel:
                    outstanding = [d for d in case["required"] if d not in case["received"]]
                    yield task.when_all([ctx.call_activity(withdraw_request, input={
                        "customer": case["customer"], "document": d, "effect_key": f"{key}:withdraw:{d}"})
                        for d in outstanding])
                    return {"status": "cancelled", "reason": cancel.get_result(), "withdrawn": outstanding}
                name = doc.get_result()
                if name in case["required"] and name not in case["received"]:
                    case["received"].append(name)  # a duplicate signal changes nothing
        elif step["action"] == "ask_approval":
            ctx.set_custom_status({"waiting_for": "approval"})
            case["approved"] = bool((yield ctx.wait_for_external_event("approval")))
        else:
            result = yield ctx.call_activity(file_case, input={
                "customer": case["customer"], "documents": case["received"], "effect_key": f"{key}:file"})
            return {"status": "filed", "result": result, "version": ctx.version}


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(document_agent)
        for fn in (plan_next_step, request_document, withdraw_request, file_case):
            w.add_activity(fn)
        w.start()
        c = rt.client()
        case = {"customer": "alice", "required": ["passport", "payslip"]}
        alice = c.schedule_new_orchestration(document_agent, input=case, instance_id="agent-alice", version="1")
        bob = c.schedule_new_orchestration(document_agent, input={**case, "customer": "bob"},
                                           instance_id="agent-bob", version="1")
        wait_for_custom_status(c, alice, "passport")
        for doc in ("passport", "passport", "payslip"):  # the passport signal arrives twice
            c.raise_orchestration_event(alice, "document", data=doc)
        wait_for_custom_status(c, alice, "approval")
        c.raise_orchestration_event(alice, "approval", data=True)
        wait_for_custom_status(c, bob, "passport")
        c.raise_orchestration_event(bob, "cancel", data="customer withdrew")
        ok = True
        for iid in (alice, bob):
            state = c.wait_for_orchestration_completion(iid, timeout=60)
            assert state is not None
            print(f"{iid}: {state.runtime_status.name} {state.serialized_output}")
            ok = ok and state.runtime_status == client.OrchestrationStatus.COMPLETED
        print("effects (each exactly once):")
        for key, effect in sorted(LEDGER.items()):
            print(f"  {key}: {effect}")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
