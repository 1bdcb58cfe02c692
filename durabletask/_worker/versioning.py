"""Orchestration version acceptance: comparing version strings and applying a worker's policy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import chain

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._worker.options import VersionFailureStrategy, VersioningOptions, VersionMatchStrategy

#: The failure type recorded when a worker fails an orchestration over its version.
VERSION_MISMATCH_ERROR_TYPE = "VersionMismatch"

# Dotted release numbers, optionally followed by a pre-release/build tag ("1.2.0-beta", "2.0rc1").
_VERSION = re.compile(r"^[vV]?(\d+(?:\.\d+)*)(?:[-_.+]?([0-9A-Za-z.\-_+]*))?$")


def _parse(version: str) -> tuple[tuple[int, ...], str] | None:
    match = _VERSION.match(version.strip())
    if match is None:
        return None
    release = tuple(int(part) for part in match.group(1).split("."))
    # Trailing zeros do not change a version: 1.0 and 1.0.0 are the same release.
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    return release, (match.group(2) or "").lower()


def _sign(left: object, right: object) -> int:
    return int(left > right) - int(left < right)  # type: ignore[operator]


def compare_versions(version: str | None, other: str | None) -> int:
    """Order two version strings: negative, zero or positive as ``version`` is older, equal or newer.

    Dotted numbers compare numerically (``1.10 > 1.9``, ``1.0 == 1.0.0``); a release with a
    pre-release tag is older than the plain release. A missing version is older than any version.
    Strings that are not version-like compare lexically.
    """
    if not version and not other:
        return 0
    if not version:
        return -1
    if not other:
        return 1
    left, right = _parse(version), _parse(other)
    if left is None or right is None:
        return _sign(version, other)
    if left[0] != right[0]:
        return _sign(left[0], right[0])
    left_tag, right_tag = left[1], right[1]
    if left_tag == right_tag:
        return 0
    if not left_tag or not right_tag:
        # An untagged release is newer than any of its pre-releases.
        return 1 if not left_tag else -1
    return _sign(left_tag, right_tag)


@dataclass(frozen=True)
class VersionMismatch:
    """Why an orchestration's version was not accepted."""

    message: str

    def failure_details(self) -> pb.TaskFailureDetails:
        """The failure recorded on an orchestration failed for this mismatch."""
        return pb.TaskFailureDetails(
            errorType=VERSION_MISMATCH_ERROR_TYPE, errorMessage=self.message, isNonRetriable=True
        )


def check_orchestration_version(
    options: VersioningOptions | None, orchestration_version: str | None
) -> VersionMismatch | None:
    """Apply a worker's match strategy to an orchestration version; ``None`` means accepted."""
    if options is None or options.match_strategy in (None, VersionMatchStrategy.NONE):
        return None
    order = compare_versions(orchestration_version, options.version)
    if options.match_strategy is VersionMatchStrategy.STRICT:
        if order != 0:
            return VersionMismatch(
                f"The orchestration version '{orchestration_version or ''}' does not match "
                f"the worker version '{options.version or ''}'."
            )
        return None
    if options.match_strategy is VersionMatchStrategy.CURRENT_OR_OLDER:
        if order > 0:
            return VersionMismatch(
                f"The orchestration version '{orchestration_version or ''}' is greater than "
                f"the worker version '{options.version or ''}'."
            )
        return None
    # A strategy this worker does not understand must not silently run the orchestration.
    return VersionMismatch(f"The version match strategy '{options.match_strategy}' is unknown.")


def rejects(options: VersioningOptions | None) -> bool:
    """Whether a version mismatch hands the work item back (rather than failing the orchestration)."""
    return options is None or options.failure_strategy is not VersionFailureStrategy.FAIL


def orchestration_version(request: pb.OrchestratorRequest) -> str | None:
    """The version the orchestration was started with, from its ``executionStarted`` event."""
    for event in chain(request.pastEvents, request.newEvents):
        if event.HasField("executionStarted"):
            started = event.executionStarted
            return started.version.value if started.HasField("version") else None
    return None
