"""History streaming end to end: a work item whose history is too large to send inline is fetched by the worker."""

from __future__ import annotations

from typing import Any

import pytest

from durabletask import client, task
from durabletask._worker.session_cache import ExtendedSessionOptions

from .conftest import Hub

TIMERS = 10_000


def echo(ctx: task.ActivityContext, value: int) -> int:
    return value


def many_timers(ctx: task.OrchestrationContext, count: int) -> Any:
    due = ctx.current_utc_datetime
    yield task.when_all([ctx.create_timer(due) for _ in range(count)])
    # This step replays everything above: two events per timer, over 20,000 in all.
    echoed = yield ctx.call_activity(echo, input=count)
    return echoed * 2


@pytest.mark.timeout(240)
@pytest.mark.emulator_internals("lowers the emulator's streaming threshold and counts streamed histories")
def test_a_20000_event_history_is_streamed_and_replays(hub: Hub) -> None:
    if hub.server is None:
        pytest.skip("needs the in-process emulator to lower its streaming threshold and count streamed work items")
    engine = hub.server.engine
    engine.history_streaming_threshold = 256 * 1024
    streamed = engine.streamed_histories
    try:
        # Without a live session every step replays the full history, so the streamed one is used.
        hub.start_worker([many_timers], [echo], extended_sessions=ExtendedSessionOptions(max_cached_orchestrations=0))
        c = hub.client()
        iid = c.schedule_new_orchestration(many_timers, input=TIMERS)
        state = c.wait_for_orchestration_completion(iid, timeout=200)
    finally:
        from dtscale_emulator.engine.instances import DEFAULT_HISTORY_STREAMING_THRESHOLD

        engine.history_streaming_threshold = DEFAULT_HISTORY_STREAMING_THRESHOLD
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == str(TIMERS * 2)
    assert engine.streamed_histories > streamed
    assert len(c.get_orchestration_history(iid)) >= 20_000
