"""The failure of an orchestration whose result cannot be written as JSON, under the compatible API's module path.

The path is part of the behaviour: it is the ``errorType`` recorded for such a failure (the class's qualified name),
so histories and ``is_caused_by`` checks read the same under either SDK.
"""

from __future__ import annotations

from typing import Any

from durabletask._errors import DurableTaskError

__all__ = ["JsonEncodeOutputException"]


class JsonEncodeOutputException(DurableTaskError):
    """The value an orchestrator returned could not be serialized; the orchestration fails with this error.

    Attributes:
        problem_object: The value that could not be encoded.
    """

    def __init__(self, problem_object: Any) -> None:
        super().__init__()
        self.problem_object = problem_object

    def __str__(self) -> str:
        return f"The orchestration result could not be encoded. Object details: {self.problem_object}"
