"""Worker construction: option defaults and validation, logger resolution, and the public names."""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

import pytest
from worker_fakes import activity_item

from durabletask import worker as worker_module
from durabletask._registry import Registry
from durabletask._worker.activity_runner import ActivityRunner
from durabletask.worker import ConcurrencyOptions, TaskHubGrpcWorker, VersioningOptions


def test_concurrency_defaults_scale_with_processors() -> None:
    cpus = os.cpu_count() or 1
    options = ConcurrencyOptions()
    assert options.maximum_concurrent_activity_work_items == 100 * cpus
    assert options.maximum_concurrent_orchestration_work_items == 100 * cpus
    assert options.maximum_concurrent_entity_work_items == 100 * cpus
    assert options.maximum_thread_pool_workers == cpus + 4
    assert ConcurrencyOptions(7).maximum_concurrent_activity_work_items == 7


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_concurrency_limits_must_be_positive_integers(bad: Any) -> None:
    with pytest.raises(ValueError):
        ConcurrencyOptions(maximum_concurrent_orchestration_work_items=bad)


def test_concurrency_options_are_mutable_and_checked_when_assigned() -> None:
    options = ConcurrencyOptions(maximum_thread_pool_workers=2)
    options.maximum_thread_pool_workers = 9
    assert options.maximum_thread_pool_workers == 9
    options.maximum_thread_pool_workers = None
    assert options.maximum_thread_pool_workers == (os.cpu_count() or 1) + 4
    with pytest.raises(ValueError, match="maximum_concurrent_entity_work_items"):
        options.maximum_concurrent_entity_work_items = 0


def test_versioning_options_are_mutable() -> None:
    options = VersioningOptions("1.0")
    options.version = "2.0"
    assert options.version == "2.0"


def test_versioning_options_keep_their_values() -> None:
    options = VersioningOptions("2.0", "1.0")
    assert (options.version, options.default_version, options.match_strategy, options.failure_strategy) == (
        "2.0",
        "1.0",
        None,
        None,
    )


def test_given_logger_is_used_and_cannot_be_mixed_with_handlers() -> None:
    mine = logging.getLogger("durabletask-worker-tests")
    assert TaskHubGrpcWorker(logger=mine)._logger is mine
    with pytest.raises(ValueError):
        TaskHubGrpcWorker(logger=mine, log_handler=logging.NullHandler())


def test_handler_and_formatter_are_deprecated_but_honoured() -> None:
    handler = logging.NullHandler()
    formatter = logging.Formatter("%(message)s")
    with pytest.warns(DeprecationWarning, match="deprecated"):
        worker = TaskHubGrpcWorker(log_handler=handler, log_formatter=formatter)
    assert worker._logger.handlers == [handler]
    assert handler.formatter is formatter


def test_default_logger_is_private_to_the_worker() -> None:
    first, second = TaskHubGrpcWorker()._logger, TaskHubGrpcWorker()._logger
    assert first is not second
    assert len(first.handlers) == 1 and first.handlers[0].level == logging.INFO
    assert first.name == "durabletask-worker"


def test_worker_keeps_the_compatible_constructor_keywords() -> None:
    params = inspect.signature(TaskHubGrpcWorker.__init__).parameters
    expected = {
        "host_address",
        "metadata",
        "log_handler",
        "log_formatter",
        "logger",
        "channel",
        "secure_channel",
        "interceptors",
        "channel_options",
        "resiliency_options",
        "concurrency_options",
        "maximum_timer_interval",
        "payload_store",
        "data_converter",
        "exception_properties_provider",
        "emit_trace_spans",
    }
    assert expected <= set(params)
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in expected)


def test_public_names() -> None:
    for name in worker_module.__all__:
        assert getattr(worker_module, name) is not None
    for error in ("OrchestratorNotRegisteredError", "ActivityNotRegisteredError", "EntityNotRegisteredError"):
        cls = getattr(worker_module, error)
        assert issubclass(cls, ValueError)
        assert cls.__module__ == "durabletask.worker"


def test_exception_properties_are_recorded_on_activity_failures() -> None:
    class Provider:
        def get_exception_properties(self, exception: BaseException) -> dict[str, Any]:
            return {"kind": type(exception).__name__, "retryable": False}

    class BrokenProvider:
        def get_exception_properties(self, exception: BaseException) -> dict[str, Any]:
            raise RuntimeError("provider bug")

    def fail(ctx: Any, _: Any) -> None:
        raise OSError("disk full")

    registry = Registry()
    registry.add_activity(fail)
    log = logging.getLogger("durabletask-worker-tests")
    request = activity_item("fail").activityRequest

    details = ActivityRunner(registry, logger=log, exception_properties_provider=Provider()).run(request, "t")
    assert details.failureDetails.properties["kind"].string_value == "OSError"
    assert details.failureDetails.properties["retryable"].bool_value is False

    fallback = ActivityRunner(registry, logger=log, exception_properties_provider=BrokenProvider()).run(request, "t")
    assert fallback.failureDetails.errorMessage == "disk full"
    assert not fallback.failureDetails.properties


def _advertised(worker: TaskHubGrpcWorker) -> tuple[int, int, int]:
    request = worker._work_items_request()
    return (
        request.maxConcurrentOrchestrationWorkItems,
        request.maxConcurrentActivityWorkItems,
        request.maxConcurrentEntityWorkItems,
    )


def test_a_stream_asks_for_no_more_work_than_its_threads_can_start() -> None:
    # The defaults allow 100 items per CPU, but synchronous code runs on 8 threads per kind: a backend
    # leasing more would leave items queued in the worker while their leases run out.
    w = TaskHubGrpcWorker(concurrency_options=ConcurrencyOptions(maximum_thread_pool_workers=8))
    w.add_activity(lambda ctx, x: x, name="sync_activity")
    assert _advertised(w) == (8, 8, 8)
    small = TaskHubGrpcWorker(concurrency_options=ConcurrencyOptions(3, 2, 5, maximum_thread_pool_workers=4))
    assert _advertised(small) == (2, 3, 4)


def test_async_activities_are_not_capped_by_the_thread_pool() -> None:
    async def fetch(ctx: Any, x: int) -> int:
        return x

    options = ConcurrencyOptions(maximum_concurrent_activity_work_items=50, maximum_thread_pool_workers=2)
    w = TaskHubGrpcWorker(concurrency_options=options)
    w.add_activity(fetch)
    assert _advertised(w)[1] == 50
    w.add_activity(lambda ctx, x: x, name="blocking")  # one synchronous activity needs a thread per item
    assert _advertised(w)[1] == 2
