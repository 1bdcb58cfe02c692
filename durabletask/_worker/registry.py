"""A worker's registry: the registered functions plus the worker's versioning and code-mismatch policies."""

from __future__ import annotations

from typing import Any

from durabletask._registry import Registry
from durabletask._replay.activity_control import CONTROL_ENTITY
from durabletask._worker.code_check import CodeMismatchPolicy
from durabletask._worker.options import VersioningOptions


class WorkerRegistry(Registry):
    """What a worker can run, and the policies its runners apply before running it.

    ``versioning`` is the worker's versioning policy; orchestration code reads its
    ``default_version`` for sub-orchestrations started without an explicit version.
    """

    def __init__(self) -> None:
        super().__init__()
        self.versioning: VersioningOptions | None = None
        # What to do with an instance started by other orchestrator code (see code_check.py).
        self.code_mismatch_policy: CodeMismatchPolicy = CodeMismatchPolicy.LOG

    def get_entity(self, name: str) -> Any | None:
        """The registered entity ``name``; the built-in activity control entity when that is asked for."""
        found = super().get_entity(name)
        if found is None and name.lower() == CONTROL_ENTITY:
            from durabletask._worker.heartbeats import control_entity

            return control_entity
        return found
