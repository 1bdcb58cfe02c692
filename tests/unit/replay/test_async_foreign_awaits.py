"""An ``async def`` orchestrator that awaits anything but a durable task fails at once, naming it, with no I/O.

The coroutine is stepped by hand, never on an event loop: asyncio's awaitables find a stand-in loop that
refuses every use, and anything else that suspends the coroutine is refused by the driver.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from durabletask import task
from durabletask._replay.executor import OrchestrationExecutor

from .history import History, failed_with, output, registry, run

NON_DURABLE = "durabletask.task.NonDeterminismError"


def refused(orchestrator: Any) -> str:
    details = failed_with(run(History().new().started(orchestrator.__name__), orchestrator))
    assert details.errorType == NON_DURABLE, details
    assert "Move the I/O into an activity" in details.errorMessage
    return str(details.errorMessage)


def test_asyncio_sleep_is_refused_naming_the_call_and_the_line() -> None:
    async def napping(ctx: task.OrchestrationContext, _: Any) -> Any:
        await asyncio.sleep(1)

    message = refused(napping)
    assert message.startswith("orchestrator 'napping' awaited asyncio.tasks.sleep() at test_async_foreign_awaits.py")
    assert "ctx.create_timer" in message


def test_a_zero_sleep_that_yields_nothing_is_refused_too() -> None:
    async def yielding(ctx: task.OrchestrationContext, _: Any) -> Any:
        await asyncio.sleep(0)

    assert "awaited asyncio.tasks.sleep()" in refused(yielding)
    assert "which yielded None" in refused(yielding)


@pytest.fixture
def other_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_a_future_of_another_running_loop_fails_at_once_instead_of_hanging(
    other_loop: asyncio.AbstractEventLoop,
) -> None:
    async def make_future() -> asyncio.Future[Any]:
        return asyncio.get_running_loop().create_future()

    pending = asyncio.run_coroutine_threadsafe(make_future(), other_loop).result(5)  # never completed

    async def waiting(ctx: task.OrchestrationContext, _: Any) -> Any:
        await pending

    assert "awaited an asyncio.Future (it completes only on its own event loop)" in refused(waiting)


def test_a_network_client_is_stopped_before_it_connects() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]

    async def fetching(ctx: task.OrchestrationContext, _: Any) -> Any:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.0\r\n\r\n")

    try:
        message = refused(fetching)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    finally:
        server.close()
    assert "awaited asyncio.streams.open_connection()" in message
    assert "it needs an event loop" in message


def test_a_refusal_swallowed_by_the_orchestrator_still_fails_it_and_finally_blocks_run_once() -> None:
    async def stubborn(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            await asyncio.sleep(5)
        except Exception:
            return "an except Exception does not catch the refusal"
        except BaseException:
            pass  # even this does not let the orchestrator carry on
        finally:
            ctx.set_custom_status("cleaned up")
        return "carried on"

    result = run(History().new().started("stubborn"), stubborn)
    details = failed_with(result)
    assert details.errorType == NON_DURABLE
    assert "awaited asyncio.tasks.sleep()" in details.errorMessage
    assert result.encoded_custom_status == '"cleaned up"'


def test_the_refusal_names_the_orchestrators_own_helper_and_what_it_reached() -> None:
    async def fetch_rate(currency: str) -> float:
        await asyncio.sleep(0.1)  # stands in for an HTTP call
        return 1.0

    async def pricing(ctx: task.OrchestrationContext, _: Any) -> Any:
        return await fetch_rate("EUR")

    message = refused(pricing)
    assert "orchestrator 'pricing' awaited tests.unit.replay.test_async_foreign_awaits." in message
    assert ".fetch_rate() at test_async_foreign_awaits.py, line " in message
    assert ", which reached asyncio.tasks.sleep(): it needs an event loop" in message


def test_starting_asyncio_tasks_or_callbacks_from_orchestrator_code_is_refused() -> None:
    async def spawning(ctx: task.OrchestrationContext, _: Any) -> Any:
        background = asyncio.sleep(1)
        try:
            spawned = asyncio.ensure_future(background)
            print(spawned)  # not reached
        finally:
            background.close()
        return "spawned"

    async def calling_back(ctx: task.OrchestrationContext, _: Any) -> Any:
        asyncio.get_event_loop().call_soon(print, "side effect")
        return "called back"

    assert "orchestrator 'spawning' called asyncio.tasks.ensure_future() at " in refused(spawning)
    message = refused(calling_back)
    assert message.startswith("orchestrator 'calling_back' used loop.call_soon at test_async_foreign_awaits.py")
    assert "but orchestrators have no event loop" in message


def test_asyncio_gather_of_durable_tasks_is_refused_in_favour_of_when_all() -> None:
    async def gathering(ctx: task.OrchestrationContext, _: Any) -> Any:
        return await asyncio.gather(ctx.call_activity("a"), ctx.call_activity("b"))

    message = refused(gathering)
    assert "orchestrator 'gathering' called asyncio.tasks.gather() at " in message
    assert "task.when_all" in message


def test_a_durable_task_awaited_after_a_foreign_awaitable_is_never_scheduled() -> None:
    async def mixed(ctx: task.OrchestrationContext, _: Any) -> Any:
        await asyncio.sleep(0)
        return await ctx.call_activity("never")

    result = run(History().new().started("mixed"), mixed)
    assert [a.WhichOneof("orchestratorActionType") for a in result.actions] == ["completeOrchestration"]


def test_the_threads_running_loop_is_restored_after_every_batch() -> None:
    async def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
        return await ctx.wait_for_external_event("go")

    async def fails(ctx: task.OrchestrationContext, _: Any) -> Any:
        await asyncio.sleep(1)

    executor = OrchestrationExecutor(registry(waits))
    executor.execute("i", [], History("i").new().started("waits").new_events)
    assert asyncio.events._get_running_loop() is None
    assert output(executor.resume(History("i").new().orchestrator_started().event_raised("go", 5).new_events)) == 5
    assert asyncio.events._get_running_loop() is None
    refused(fails)
    assert asyncio.events._get_running_loop() is None


async def test_on_a_thread_with_a_running_loop_nothing_is_scheduled_on_it() -> None:
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]

    async def sleeper(ctx: task.OrchestrationContext, _: Any) -> Any:
        await asyncio.sleep(30)

    assert "awaited asyncio.tasks.sleep()" in refused(sleeper)
    assert asyncio.get_running_loop() is loop
    assert len(loop._scheduled) == before  # type: ignore[attr-defined]


def test_generator_orchestrators_keep_the_threads_loop() -> None:
    def classic(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return "no loop, as before"
        return "a loop"
        yield  # a generator that never yields

    assert output(run(History().new().started("classic"), classic)) == "no loop, as before"
