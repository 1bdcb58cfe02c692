"""Argument checks for client calls, raised at the call site with the offending argument's name."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from durabletask import _json_codec
from durabletask._attach.fingerprint import TAG_PREFIX, is_reserved_tag
from durabletask._grpc.errors import InvalidArgumentError
from durabletask._instance_models import DataConverter, OrchestrationStatus
from durabletask._registry import RegistrationError, function_name

#: Longest instance ID accepted; IDs are stored and indexed by the service, so keep them short.
MAX_INSTANCE_ID_LENGTH = 1024
#: Longest event, operation or orchestrator name accepted.
MAX_NAME_LENGTH = 1024


def instance_id(value: object, argument: str = "instance_id") -> str:
    """Return ``value`` if it is a usable instance ID, else raise ``ValueError`` naming ``argument``."""
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{argument} must be a non-empty string")
    if len(value) > MAX_INSTANCE_ID_LENGTH:
        raise ValueError(f"{argument} is {len(value)} characters long; the limit is {MAX_INSTANCE_ID_LENGTH}")
    if any(ord(ch) < 0x20 for ch in value):
        raise ValueError(f"{argument} {value!r} contains control characters")
    return value


def name(value: object, argument: str) -> str:
    """Return ``value`` if it is a non-empty name of bounded length."""
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{argument} must be a non-empty string")
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"{argument} is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    return value


def orchestrator_name(orchestrator: str | Callable[..., Any]) -> str:
    """The name an orchestrator is scheduled under: the string itself, or the function's registered name."""
    if isinstance(orchestrator, str):
        return name(orchestrator, "orchestrator")
    if not callable(orchestrator):
        raise TypeError(f"orchestrator must be a function or a name, not {type(orchestrator).__name__}")
    try:
        resolved = function_name(orchestrator)
    except RegistrationError as exc:
        raise ValueError(f"orchestrator: {exc}") from exc
    if resolved == "<lambda>":
        raise ValueError("orchestrator: cannot schedule a lambda by name; pass the registered name instead")
    return resolved


def wait_timeout(value: object, argument: str = "timeout") -> float | None:
    """A positive number of seconds (``None`` waits without a deadline)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number of seconds, not {type(value).__name__}")
    if math.isnan(value) or value <= 0:
        raise ValueError(f"{argument} must be greater than zero, got {value!r}")
    return float(value)


def optional_datetime(value: object, argument: str) -> datetime | None:
    """``value`` if it is a datetime or ``None``."""
    if value is not None and not isinstance(value, datetime):
        raise TypeError(f"{argument} must be a datetime, not {type(value).__name__}")
    return value


def page_size(value: object, argument: str = "page_size") -> int | None:
    """A positive page size, or ``None`` for the service default."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{argument} must not be negative, got {value}")
    return value


def statuses(
    value: Iterable[OrchestrationStatus | str] | OrchestrationStatus | str | None, argument: str = "runtime_status"
) -> list[Any]:
    """Wire numbers for a list of statuses (names such as ``"COMPLETED"`` are accepted too)."""
    if value is None:
        return []
    if isinstance(value, (str, OrchestrationStatus)):
        value = [value]
    out: list[Any] = []
    for item in value:
        if isinstance(item, str):
            try:
                item = OrchestrationStatus[item.upper()]
            except KeyError:
                raise ValueError(f"{argument}: unknown orchestration status {item!r}") from None
        if not isinstance(item, OrchestrationStatus):
            raise TypeError(f"{argument} items must be OrchestrationStatus, not {type(item).__name__}")
        out.append(item.value)
    return out


def tags(value: Mapping[str, str] | None) -> dict[str, str] | None:
    """String-to-string tags, none of them a key the attach fingerprint reserves."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"tags must be a dict of str to str, not {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"tags must map str to str; got {key!r}: {item!r}")
        if is_reserved_tag(key):
            # A caller's value there would overwrite or forge the fingerprint that attach relies on.
            raise InvalidArgumentError(
                f"tags: the key {key!r} is reserved (keys starting with {TAG_PREFIX!r} hold the instance's "
                "attach fingerprint); choose another key",
                method="StartInstance",
            )
    return dict(value)


def payload(
    converter: DataConverter,
    value: Any,
    field: str,
    limit: int = _json_codec.MAX_PAYLOAD_BYTES,
    instance_id: str | None = None,
) -> str | None:
    """Serialize a payload with ``converter`` and enforce the size limit (the service's, or a payload store's)."""
    if value is None:
        return None
    text = converter.serialize(value)
    _json_codec.check_size(field, text, limit, instance_id)
    return text
