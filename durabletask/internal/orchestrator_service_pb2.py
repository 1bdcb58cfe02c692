"""Compatibility alias of the generated protocol module (e.g. for ``OrchestrationIdReusePolicy``)."""

from durabletask._proto.orchestrator_service_pb2 import *  # noqa: F403
from durabletask._proto.orchestrator_service_pb2 import DESCRIPTOR  # noqa: F401
