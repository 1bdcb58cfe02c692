"""The sync and async schedule clients offer the same methods with the same parameters."""

from __future__ import annotations

import inspect

import pytest

from durabletask.scheduled import AsyncScheduleClient, AsyncScheduledTaskClient, ScheduleClient, ScheduledTaskClient


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_") and not isinstance(member, staticmethod)
    }


@pytest.mark.parametrize(
    ("sync", "asynchronous"), [(ScheduleClient, AsyncScheduleClient), (ScheduledTaskClient, AsyncScheduledTaskClient)]
)
def test_sync_and_async_clients_match(sync: type, asynchronous: type) -> None:
    mine, theirs = _methods(sync), _methods(asynchronous)
    assert set(mine) == set(theirs)
    for name, signature in mine.items():
        assert list(signature.parameters) == list(theirs[name].parameters), name
    for name in theirs:
        if name not in ("get_schedule_client", "__init__"):
            assert inspect.iscoroutinefunction(getattr(asynchronous, name)), name
