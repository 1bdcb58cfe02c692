"""Scheduled tasks: a nightly sales report, and an operator who pauses it for a maintenance night.

The schedule is a durable entity: it starts the ``sales_report`` orchestration every night at 02:00 UTC, each
run named after its due time, so a night's report is never started twice. The operator pauses the schedule
for one night (no report that night) and resumes it; reports go on from the next night.

On the embedded emulator the nights pass on a simulated clock, so the sample takes seconds. With
``--connection-string`` or ``--address`` the "night" is three real seconds instead. (``cron="0 2 * * *"``
with ``time_zone="Europe/Paris"`` would read 02:00 in Paris instead; that needs the ``cron`` extra.)
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task
from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient, ScheduleStatus

SCHEDULE_ID = "nightly-sales-report"


def gather_sales(ctx: task.ActivityContext, night: str) -> int:
    return 1000 + sum(map(ord, night)) % 500  # a stand-in for the real query


def sales_report(ctx: task.OrchestrationContext, region: str) -> Any:
    night = ctx.current_utc_datetime.date().isoformat()
    total = yield ctx.call_activity(gather_sales, input=night)
    return {"region": region, "night": night, "total": total}


class Nights:
    """Moves to a due time: on the simulated clock at once, on a real backend by waiting."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock

    def now(self) -> datetime:
        return self.clock.now() if self.clock is not None else datetime.now(timezone.utc)

    def until(self, when: datetime) -> None:
        if self.clock is not None:
            self.clock.set(when)
        else:
            time.sleep(max(0.0, (when - self.now()).total_seconds()))


def wait_for_run(c: client.TaskHubGrpcClient, instance_id: str) -> client.OrchestrationState:
    deadline = time.monotonic() + 60
    while c.get_orchestration_state(instance_id, fetch_payloads=False) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the schedule never started {instance_id}")
        time.sleep(0.05)
    state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None
    return state


def next_due(schedules: ScheduledTaskClient, after: datetime | None) -> datetime:
    """The schedule's next due time once its entity has armed one later than ``after``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = schedules.get_schedule(SCHEDULE_ID)
        if found is not None and found.next_run_at is not None and (after is None or found.next_run_at > after):
            return found.next_run_at
        time.sleep(0.05)
    raise TimeoutError("the schedule never armed its next run")


def main() -> int:
    args = parse_args(__doc__ or "")
    simulated = not args.connection_string and not args.address
    clock = None
    if simulated:
        from dtscale_emulator.ops.clock import ManualClock

        clock = ManualClock(datetime(2030, 3, 1, 9, 30, tzinfo=timezone.utc))
    nights = Nights(clock)
    night = timedelta(days=1) if simulated else timedelta(seconds=3)
    with Runtime(args.connection_string, args.address, clock=clock) as rt, rt.worker() as w:
        w.add_orchestrator(sales_report)
        w.add_activity(gather_sales)
        w.configure_scheduled_tasks(clock=nights.now)
        w.start()
        c = rt.client()
        schedules = ScheduledTaskClient(c)
        now = nights.now()
        first = now.replace(hour=2, minute=0, second=0, microsecond=0) + timedelta(days=1) if simulated else now + night
        schedules.create_schedule(
            ScheduleCreationOptions(SCHEDULE_ID, "sales_report", night, orchestration_input="EMEA", start_at=first)
        )
        due = next_due(schedules, None)
        print(f"created {SCHEDULE_ID}: every {night}, first run {due.isoformat()}")
        reports = []
        for n in range(1, 5):
            if n == 3:
                schedules.get_schedule_client(SCHEDULE_ID).pause()
                paused = schedules.get_schedule(SCHEDULE_ID)
                assert paused is not None and paused.status == ScheduleStatus.PAUSED
                print(f"operator: paused {SCHEDULE_ID} for the maintenance night")
                nights.until(due + night / 2)
                schedules.get_schedule_client(SCHEDULE_ID).resume()
                due = next_due(schedules, None)
                print(f"operator: resumed {SCHEDULE_ID}; next run {due.isoformat()}")
                continue
            nights.until(due)
            state = wait_for_run(c, f"{SCHEDULE_ID}-{due.isoformat()}")
            reports.append(state.instance_id)
            print(f"night {n}: {state.instance_id} {state.runtime_status.name} {state.serialized_output}")
            due = next_due(schedules, due)
        query = client.OrchestrationQuery(instance_id_prefix=f"{SCHEDULE_ID}-")
        started = sorted(s.instance_id for s in c.get_all_orchestration_states(query))
        print(f"reports started: {len(started)} (none during the maintenance night)")
        schedules.get_schedule_client(SCHEDULE_ID).delete()
        return 0 if started == sorted(reports) and len(started) == 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
