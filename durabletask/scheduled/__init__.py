"""Scheduled tasks: orchestrations started again and again on a fixed interval (or a cron expression).

Each schedule is a durable entity (``schedule``) that starts its orchestration when a run is due; clients
change it through a small orchestration so they learn whether the change was applied. Enable it on a worker
with ``TaskHubGrpcWorker.configure_scheduled_tasks()`` and manage schedules with :class:`ScheduledTaskClient`
or :class:`AsyncScheduledTaskClient`. Compatible with ``durabletask.scheduled`` of Microsoft's package: a
schedule made by either SDK runs on either worker.
"""

from durabletask.scheduled.client import (
    AsyncScheduleClient,
    AsyncScheduledTaskClient,
    ScheduleClient,
    ScheduledTaskClient,
)
from durabletask.scheduled.exceptions import (
    ScheduleClientValidationError,
    ScheduleError,
    ScheduleInvalidTransitionError,
    ScheduleNotFoundError,
)
from durabletask.scheduled.models import (
    ScheduleCreationOptions,
    ScheduleDescription,
    ScheduleQuery,
    ScheduleUpdateOptions,
)
from durabletask.scheduled.schedule_status import ScheduleStatus

__all__ = [
    "AsyncScheduleClient",
    "AsyncScheduledTaskClient",
    "ScheduleClient",
    "ScheduleClientValidationError",
    "ScheduleCreationOptions",
    "ScheduleDescription",
    "ScheduleError",
    "ScheduleInvalidTransitionError",
    "ScheduleNotFoundError",
    "ScheduleQuery",
    "ScheduleStatus",
    "ScheduleUpdateOptions",
    "ScheduledTaskClient",
]

PACKAGE_NAME = "durabletask.scheduled"
