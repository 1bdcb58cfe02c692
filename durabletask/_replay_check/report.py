"""What a replay check found: per execution of an instance, whether it replays, diverges or was not this worker's."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from durabletask._errors import DurableTaskError


class ReplayDivergenceError(DurableTaskError, AssertionError):
    """A recorded history does not replay with the current orchestrator code (see ``raise_if_diverged``)."""


class Verdict(Enum):
    """The outcome of replaying one execution's history."""

    REPLAYS = "replays"
    """The current code makes the recorded calls, in the recorded order, and ends as the history ends."""
    DIVERGES = "diverges"
    """The current code would fail this instance (or end it differently) when it next runs."""
    SKIPPED = "skipped"
    """This worker would not run the instance (its version policy hands it on, its filters leave it to others)."""


class DivergenceKind(Enum):
    """How a history and the current code part ways."""

    NONDETERMINISM = "nondeterminism"
    """At a sequence ID, the history records one durable call and the current code makes another, or none."""
    OUTCOME = "outcome"
    """The history ends the execution at a point where the current code still makes calls or waits."""
    ERROR = "error"
    """The current code raises while replaying a history that records no such failure."""
    VERSION = "version"
    """The worker's versioning or code policy fails the instance instead of running it."""
    HISTORY = "history"
    """The history itself cannot be replayed (no start event, an unknown event kind)."""


@dataclass(frozen=True)
class SourceLocation:
    """Where in the orchestrator code something happened: the user's frame, not the SDK's."""

    path: str
    line: int
    function: str
    code: str | None = None  # the source line, when the file can be read

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"


@dataclass(frozen=True)
class Divergence:
    """Where and how the current code departs from a recorded history.

    Attributes:
        kind: What sort of divergence it is.
        message: One sentence for a person.
        sequence_id: The durable sequence ID at which the history and the code disagree, when there is one.
        recorded: The call (or ending) the history records there, e.g. ``create_timer()``.
        current: The call the current code makes there instead, e.g. ``call_activity('validate')``; ``None`` when
            it makes none.
        location: The line of orchestrator code that made ``current`` (or, when it makes no call, where the code
            waits); for errors, the line that raised.
    """

    kind: DivergenceKind
    message: str
    sequence_id: int | None = None
    recorded: str | None = None
    current: str | None = None
    location: SourceLocation | None = None


@dataclass(frozen=True)
class ReplayResult:
    """The check of one execution (one continue-as-new generation) of one instance.

    Attributes:
        instance_id: The orchestration instance.
        name: The orchestrator name its history was started with.
        version: The orchestration version of this execution (``None`` when it has none).
        execution: The generation's position in the history that was checked (0 for the first or only one).
        execution_id: The execution ID the history records, when it records one.
        parent_instance_id: The parent orchestration, for a sub-orchestration.
        source: Where the history came from (an endpoint, a file).
        verdict: Replays, diverges, or skipped.
        divergence: What diverged, for a diverging history.
        reason: Why it was skipped.
        events: How many history events were replayed.
    """

    instance_id: str
    name: str
    version: str | None
    verdict: Verdict
    execution: int = 0
    execution_id: str | None = None
    parent_instance_id: str | None = None
    source: str = ""
    divergence: Divergence | None = None
    reason: str = ""
    events: int = 0

    @property
    def diverges(self) -> bool:
        """True when the verdict is ``DIVERGES``: the current code makes other calls than the history recorded."""
        return self.verdict is Verdict.DIVERGES

    def describe(self) -> str:
        """Two or three lines for a person: the instance, then what diverged and where."""
        version = f" v{self.version}" if self.version else ""
        generation = f" (execution {self.execution})" if self.execution else ""
        head = f"{self.instance_id}{generation}: {self.name}{version} {self.verdict.value}"
        if self.divergence is None:
            return head if not self.reason else f"{head}: {self.reason}"
        lines = [head, f"  {self.divergence.message}"]
        location = self.divergence.location
        if location is not None:
            code = f": {location.code.strip()}" if location.code else ""
            lines.append(f"  at {location}{code}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-compatible data."""
        divergence = self.divergence
        return {
            "instance_id": self.instance_id,
            "name": self.name,
            "version": self.version,
            "execution": self.execution,
            "execution_id": self.execution_id,
            "parent_instance_id": self.parent_instance_id,
            "source": self.source,
            "verdict": self.verdict.value,
            "reason": self.reason or None,
            "events": self.events,
            "divergence": None if divergence is None else _divergence_dict(divergence),
        }


def _divergence_dict(divergence: Divergence) -> dict[str, Any]:
    location = divergence.location
    return {
        "kind": divergence.kind.value,
        "message": divergence.message,
        "sequence_id": divergence.sequence_id,
        "recorded": divergence.recorded,
        "current": divergence.current,
        "location": None
        if location is None
        else {"path": location.path, "line": location.line, "function": location.function, "code": location.code},
    }


@dataclass(frozen=True)
class ReplayReport:
    """Every result of one check, in the order the histories were given."""

    results: tuple[ReplayResult, ...]

    @property
    def ok(self) -> bool:
        """Whether no history diverges (skipped ones do not count against it)."""
        return not any(r.diverges for r in self.results)

    @property
    def diverging(self) -> list[ReplayResult]:
        """The results whose verdict is ``DIVERGES``, in the order the histories were checked."""
        return [r for r in self.results if r.verdict is Verdict.DIVERGES]

    @property
    def skipped(self) -> list[ReplayResult]:
        """The results whose verdict is ``SKIPPED``: histories the worker would leave to another worker (versioning,
        filters).
        """
        return [r for r in self.results if r.verdict is Verdict.SKIPPED]

    @property
    def replaying(self) -> list[ReplayResult]:
        """The results whose verdict is ``REPLAYS``: histories the current code replays call for call."""
        return [r for r in self.results if r.verdict is Verdict.REPLAYS]

    def summary(self) -> str:
        """One line: how many executions were checked and how they came out."""
        return (
            f"{len(self.results)} execution(s) checked: {len(self.replaying)} replay, "
            f"{len(self.diverging)} diverge, {len(self.skipped)} skipped"
        )

    def raise_if_diverged(self) -> None:
        """Raise :class:`ReplayDivergenceError` naming every diverging execution, e.g. in a test."""
        diverging = self.diverging
        if diverging:
            lines = "\n".join(r.describe() for r in diverging)
            raise ReplayDivergenceError(f"{len(diverging)} of {len(self.results)} execution(s) diverge:\n{lines}")

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-compatible data."""
        return {
            "ok": self.ok,
            "checked": len(self.results),
            "replays": len(self.replaying),
            "diverges": len(self.diverging),
            "skipped": len(self.skipped),
            "results": [r.to_dict() for r in self.results],
        }
