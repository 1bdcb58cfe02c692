"""A persistent, pip-installable emulator of the Durable Task Scheduler (TaskHubSidecarService over gRPC)."""

from dtscale_emulator.limits import Limits
from dtscale_emulator.ops.clock import Clock, ManualClock, SystemClock
from dtscale_emulator.server import EmulatorServer

__all__ = ["Clock", "EmulatorServer", "Limits", "ManualClock", "SystemClock"]
