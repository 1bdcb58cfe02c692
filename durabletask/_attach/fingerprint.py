"""Computes and compares the fingerprint a client records in an instance's tags when it starts it."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TAG_PREFIX = "durabletask.fingerprint."
TAG_NAME = TAG_PREFIX + "orchestrator"
TAG_VERSION = TAG_PREFIX + "version"
TAG_INPUT = TAG_PREFIX + "input-sha256"
TAG_CODE = TAG_PREFIX + "code-sha256"


def is_reserved_tag(key: str) -> bool:
    """Whether ``key`` belongs to the fingerprint: callers may not set it, and it is never shown as a tag."""
    return key.startswith(TAG_PREFIX)


def split_tags(tags: Mapping[str, str] | None) -> tuple[dict[str, str] | None, dict[str, str]]:
    """The caller's tags (``None`` when there are none) and the fingerprint's, from an instance's stored tags.

    The fingerprint travels in the instance's tags because that map is the only free-form field the service
    stores with an instance and returns with its state; the client takes it out again before showing them.
    """
    if not tags:
        return None, {}
    reserved = {key: value for key, value in tags.items() if is_reserved_tag(key)}
    callers = {key: value for key, value in tags.items() if not is_reserved_tag(key)}
    return callers or None, reserved


def _sha256(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def input_hash(serialized_input: str | None) -> str:
    """Hash of the canonical form of a JSON input: key order and whitespace do not matter."""
    if serialized_input is None or serialized_input == "":
        return _sha256("null")
    try:
        canonical = json.dumps(json.loads(serialized_input), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except json.JSONDecodeError:
        canonical = serialized_input
    return _sha256(canonical)


def _normalized_source(fn: Callable[..., Any]) -> str | None:
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    lines = [line.rstrip() for line in textwrap.dedent(source).splitlines()]
    return "\n".join(line for line in lines if line)


def _code_identity(code: Any) -> bytes:
    # Without source (e.g. code built at run time) fall back to the code object itself; stable across runs of
    # one Python version, which is what a crashed-and-restarted process needs.
    parts = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
    for const in code.co_consts:
        parts.append(_code_identity(const) if inspect.iscode(const) else repr(const).encode())
    return b"\x00".join(parts)


@functools.lru_cache(maxsize=1024)
def code_hash(fn: Callable[..., Any]) -> str | None:
    """Hash of an orchestrator's code: its dedented source, stable across processes for the same source."""
    target = inspect.unwrap(fn)
    source = _normalized_source(target)
    if source is not None:
        return _sha256(source)
    code = getattr(target, "__code__", None)
    return _sha256(_code_identity(code)) if code is not None else None


@dataclass(frozen=True)
class Fingerprint:
    """What identifies one logical run: orchestrator name, version, input, and (when known) code."""

    orchestrator: str
    version: str | None
    input_sha256: str
    code_sha256: str | None = None

    @classmethod
    def compute(
        cls, orchestrator: str, version: str | None, serialized_input: str | None, fn: Callable[..., Any] | None = None
    ) -> Fingerprint:
        return cls(
            orchestrator, version or None, input_hash(serialized_input), code_hash(fn) if fn is not None else None
        )

    def to_tags(self) -> dict[str, str]:
        tags = {TAG_NAME: self.orchestrator, TAG_VERSION: self.version or "", TAG_INPUT: self.input_sha256}
        if self.code_sha256:
            tags[TAG_CODE] = self.code_sha256
        return tags

    @classmethod
    def from_tags(cls, tags: Mapping[str, str] | None) -> Fingerprint | None:
        if not tags or TAG_NAME not in tags or TAG_INPUT not in tags:
            return None
        return cls(tags[TAG_NAME], tags.get(TAG_VERSION) or None, tags[TAG_INPUT], tags.get(TAG_CODE) or None)

    def differences(self, recorded: Fingerprint) -> list[str]:
        """Human-readable list of the parts that differ from ``recorded`` (empty when they match).

        A code hash missing on either side is not a difference: a client without the function cannot know it.
        """
        diffs = []
        if self.orchestrator != recorded.orchestrator:
            diffs.append(f"orchestrator: recorded '{recorded.orchestrator}', given '{self.orchestrator}'")
        if (self.version or None) != (recorded.version or None):
            diffs.append(f"version: recorded {recorded.version!r}, given {self.version!r}")
        if self.input_sha256 != recorded.input_sha256:
            diffs.append(
                f"input: recorded sha256 {recorded.input_sha256[:12]}…, given sha256 {self.input_sha256[:12]}…"
            )
        if self.code_sha256 and recorded.code_sha256 and self.code_sha256 != recorded.code_sha256:
            diffs.append(f"code: recorded sha256 {recorded.code_sha256[:12]}…, given sha256 {self.code_sha256[:12]}…")
        return diffs
