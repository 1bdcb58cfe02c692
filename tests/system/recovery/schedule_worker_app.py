"""A worker process running schedules: ``python schedule_worker_app.py ADDRESS LEDGER FOLDER``.

Every start of a scheduled run is recorded in the shared :class:`Ledger` (key: the run's instance ID) when the
schedule entity decides on it, before the batch's result is sent. While ``FOLDER/block`` exists, the entity
stops right there, in the middle of firing, after writing ``FOLDER/firing``: the test kills the process then.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dtscale_emulator.ops.stop_signal import StopSignal
from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.scheduled.orchestrator import execute_schedule_operation_orchestrator
from durabletask.scheduled.schedule_entity import ENTITY_NAME, Schedule
from tests.support.reliability import Ledger
from tests.system.recovery.worker_app import scheduler_or_plain_worker


def report(ctx: task.OrchestrationContext, payload: Any) -> Any:
    return payload


def main() -> None:
    address, ledger, folder = sys.argv[1], Ledger(Path(sys.argv[2])), Path(sys.argv[3])

    class RecordedSchedule(Schedule):
        def schedule_new_orchestration(
            self, orchestration_name: str, input: Any | None = None, instance_id: str | None = None
        ) -> str:
            ledger.apply(instance_id or "", orchestration_name)
            if (folder / "block").exists():
                (folder / "firing").write_text(instance_id or "")
                while True:  # mid-firing: the batch's result is never sent; the test kills us here
                    time.sleep(1)
            return super().schedule_new_orchestration(orchestration_name, input, instance_id)

    w = scheduler_or_plain_worker(address)  # with its credential when the tests target an external backend
    w.add_orchestrator(report)
    # What configure_scheduled_tasks() registers, with the recording entity in place of the plain one.
    w.add_entity(RecordedSchedule, ENTITY_NAME)
    w.add_orchestrator(execute_schedule_operation_orchestrator)
    w.add_capability(pb.WORKER_CAPABILITY_SCHEDULED_TASKS)
    stop = StopSignal((signal.SIGTERM,))
    w.start()
    stop.wait()
    w.stop()


if __name__ == "__main__":
    main()
