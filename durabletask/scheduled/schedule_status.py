"""The three statuses of a schedule and their persisted form (the .NET enum's ordinal)."""

from __future__ import annotations

from enum import Enum

__all__ = ["ScheduleStatus"]


class ScheduleStatus(str, Enum):
    """Where a schedule is in its life: never created (or deleted), running, or paused."""

    UNINITIALIZED = "Uninitialized"
    ACTIVE = "Active"
    PAUSED = "Paused"

    def to_dotnet_ordinal(self) -> int:
        """The number stored in the entity state: the dashboard and the .NET SDK read the enum's ordinal."""
        return _ORDINALS.index(self)

    @classmethod
    def from_dotnet(cls, value: int | str | None) -> ScheduleStatus:
        """The status of a stored value: an ordinal, its digits, or a member's name in any case.

        Anything else (``None``, a boolean, an unknown number or name, .NET's ``Unknown``) reads as
        ``UNINITIALIZED``, so a damaged or foreign state never makes a schedule look active.
        """
        if isinstance(value, bool) or value is None:
            return cls.UNINITIALIZED
        if isinstance(value, str):
            text = value.strip()
            if not text.isdigit():
                by_name = {member.value.lower(): member for member in cls}
                return by_name.get(text.lower(), cls.UNINITIALIZED)
            value = int(text)
        if isinstance(value, int) and 0 <= value < len(_ORDINALS):
            return _ORDINALS[value]
        return cls.UNINITIALIZED


# Order matters: it is the .NET enum's declaration order, which fixes the stored numbers.
_ORDINALS: tuple[ScheduleStatus, ...] = (ScheduleStatus.UNINITIALIZED, ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED)
