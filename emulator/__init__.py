"""A persistent, pip-installable emulator of the Durable Task Scheduler (TaskHubSidecarService over gRPC)."""

from emulator.clock import Clock, ManualClock, SystemClock
from emulator.server import EmulatorServer
from emulator.validation import Limits

__all__ = ["Clock", "EmulatorServer", "Limits", "ManualClock", "SystemClock"]
