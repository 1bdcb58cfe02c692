"""Deploy check: before a release ships, replay the running instances' histories with its code.

Release 1 runs orders (reserve, a one-day cooling-off timer, charge) and a subscription (a 30-day billing period on
a durable timer, a charge, then continue-as-new into the next period). Instances are left waiting on their timers,
as at any deploy. Then each candidate release is checked against them, as a CI step would:

* 2a inserts a fraud check before the cooling-off wait: BLOCKED. Every waiting order recorded the timer under
  sequence ID 2, where 2a now calls an activity; deployed, it would fail them with a non-determinism error.
* 2b adds a receipt after the charge: OK. Waiting orders have not reached that point; they will simply run it.
* 2c adds the fraud check to subscriptions the safe way: only executions of version 2 run it, and each
  subscription continues as new with ``new_version="2"`` at the end of its period. The running (unversioned)
  periods replay unchanged; the next ones take the new path. 2c-unversioned, the same step without the version
  check, is BLOCKED.

The same check runs from the command line (``durabletask replay-check --worker replay_check_deploy:release_2a``),
exiting 1 for a release that would break running instances. Finally 2c is deployed and a subscription with a short
period is seen continuing into version 2, running the new step.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from _support import Runtime, parse_args, wait_for_custom_status

from durabletask import client, task, worker
from durabletask.testing import ReplayChecker, histories_from_client

HERE = Path(__file__).resolve().parent
fraud_checks: list[str] = []


def reserve(ctx: task.ActivityContext, item: dict[str, Any]) -> str:
    return f"reserved {item['id']}"


def fraud_check(ctx: task.ActivityContext, item: dict[str, Any]) -> str:
    fraud_checks.append(item["id"])
    return "clean"


def charge(ctx: task.ActivityContext, item: dict[str, Any]) -> str:
    return f"charged {item['id']}"


def send_receipt(ctx: task.ActivityContext, item: dict[str, Any]) -> str:
    return f"receipt for {item['id']}"


def order_v1(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    yield ctx.call_activity(reserve, input=order)
    ctx.set_custom_status("cooling off")
    yield ctx.create_timer(timedelta(days=1))
    return (yield ctx.call_activity(charge, input=order))


def order_2a(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    yield ctx.call_activity(reserve, input=order)
    yield ctx.call_activity(fraud_check, input=order)  # inserted before the wait: breaks waiting orders
    ctx.set_custom_status("cooling off")
    yield ctx.create_timer(timedelta(days=1))
    return (yield ctx.call_activity(charge, input=order))


def order_2b(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    yield ctx.call_activity(reserve, input=order)
    ctx.set_custom_status("cooling off")
    yield ctx.create_timer(timedelta(days=1))
    charged = yield ctx.call_activity(charge, input=order)
    yield ctx.call_activity(send_receipt, input=order)  # after everything a waiting order has recorded
    return charged


def subscription_v1(ctx: task.OrchestrationContext, sub: dict[str, Any]) -> Any:
    ctx.set_custom_status(f"period {sub['period']} (v{ctx.version or 1})")
    yield ctx.create_timer(timedelta(seconds=sub["period_seconds"]))
    yield ctx.call_activity(charge, input=sub)
    ctx.continue_as_new({**sub, "period": sub["period"] + 1})


def subscription_2c(ctx: task.OrchestrationContext, sub: dict[str, Any]) -> Any:
    if ctx.version == "2":
        yield ctx.call_activity(fraud_check, input=sub)  # only in executions started as version 2
    ctx.set_custom_status(f"period {sub['period']} (v{ctx.version or 1})")
    yield ctx.create_timer(timedelta(seconds=sub["period_seconds"]))
    yield ctx.call_activity(charge, input=sub)
    ctx.continue_as_new({**sub, "period": sub["period"] + 1}, new_version="2")


def subscription_unversioned(ctx: task.OrchestrationContext, sub: dict[str, Any]) -> Any:
    yield ctx.call_activity(fraud_check, input=sub)  # the same step, for every execution: breaks waiting ones
    ctx.set_custom_status(f"period {sub['period']} (v{ctx.version or 1})")
    yield ctx.create_timer(timedelta(seconds=sub["period_seconds"]))
    yield ctx.call_activity(charge, input=sub)
    ctx.continue_as_new({**sub, "period": sub["period"] + 1}, new_version="2")


RELEASES = {
    "1": (order_v1, subscription_v1),
    "2a": (order_2a, subscription_v1),
    "2b": (order_2b, subscription_v1),
    "2c": (order_2b, subscription_2c),
    "2c-unversioned": (order_2b, subscription_unversioned),
}


def register(w: worker.TaskHubGrpcWorker, release: str) -> worker.TaskHubGrpcWorker:
    """What a release registers: its two orchestrators under their stable names, and the activities."""
    order, subscription = RELEASES[release]
    w.add_orchestrator(order, name="order")
    w.add_orchestrator(subscription, name="subscription")
    for activity in (reserve, fraud_check, charge, send_receipt):
        w.add_activity(activity)
    return w


def release_2a() -> worker.TaskHubGrpcWorker:
    """For ``durabletask replay-check --worker replay_check_deploy:release_2a`` (an unstarted worker)."""
    return register(worker.TaskHubGrpcWorker(), "2a")


def release_2b() -> worker.TaskHubGrpcWorker:
    return register(worker.TaskHubGrpcWorker(), "2b")


def deploy_check(c: client.TaskHubGrpcClient, release: str) -> bool:
    """The check a pipeline runs before deploying ``release``: every running instance must replay."""
    running = histories_from_client(c, statuses=[client.OrchestrationStatus.RUNNING])
    report = ReplayChecker(register(worker.TaskHubGrpcWorker(), release)).check(running)
    print(f"release {release}: {'OK' if report.ok else 'BLOCKED'} ({report.summary()})")
    for result in report.diverging:
        print("  " + result.describe().replace("\n", "\n  "))
    return report.ok


def command_line_check(rt: Runtime, release: str) -> int:
    where = ["--connection-string", rt.connection_string] if rt.connection_string else ["--endpoint", str(rt.address)]
    command = ["replay-check", "--worker", f"replay_check_deploy:release_{release}", "--status", "RUNNING"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "durabletask.cli", *command, *where],
                          cwd=HERE, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    print(f"$ durabletask {' '.join(command)}  -> exit code {done.returncode}")
    print("  " + (done.stdout.strip().splitlines() or [done.stderr.strip()])[-1])
    return done.returncode


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt:
        c = rt.client()
        with register(rt.worker(), "1") as first:
            first.start()
            for number in (1, 2):
                c.schedule_new_orchestration("order", input={"id": f"order-{number}"}, instance_id=f"order-{number}")
            c.schedule_new_orchestration(
                "subscription",
                instance_id="sub-monthly",
                input={"id": "sub-monthly", "period": 0, "period_seconds": 30 * 86400},
            )
            for iid, needle in (("order-1", "cooling off"), ("order-2", "cooling off"), ("sub-monthly", "period 0")):
                wait_for_custom_status(c, iid, needle)
            print("release 1 is running: two orders cooling off, a subscription in its first period")
            results = {release: deploy_check(c, release) for release in ("2a", "2b", "2c", "2c-unversioned")}
            exit_codes = {release: command_line_check(rt, release) for release in ("2a", "2b")}
            # A subscription with a short period, to see one continue into version 2 once 2c is deployed.
            c.schedule_new_orchestration("subscription", instance_id="sub-fast",
                                         input={"id": "sub-fast", "period": 0, "period_seconds": 2})  # fmt: skip
            wait_for_custom_status(c, "sub-fast", "period 0")
        # Release 1 stops; 2c, which passed, takes over. sub-fast ends its period and continues into version 2.
        with register(rt.worker(), "2c") as second:
            second.start()
            wait_for_custom_status(c, "sub-fast", "(v2)", timeout=60)
            print(f"sub-fast continued as new with version 2; fraud checks run: {fraud_checks}")
        expected = {"2a": False, "2b": True, "2c": True, "2c-unversioned": False}
        return 0 if results == expected and exit_codes == {"2a": 1, "2b": 0} and fraud_checks else 1


if __name__ == "__main__":
    raise SystemExit(main())
