"""The clients' loggers: Microsoft's defaults, and the same deprecation of log_handler/log_formatter as workers."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from durabletask import client, worker
from durabletask.azuremanaged.client import DurableTaskSchedulerClient

from .fake_sidecar import SidecarServer

DTS = {"host_address": "localhost:1", "taskhub": "hub", "token_credential": None}


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda **kw: client.TaskHubGrpcClient(**kw), "durabletask-client"),
        (lambda **kw: client.AsyncTaskHubGrpcClient(**kw), "durabletask-async_client"),
        (lambda **kw: DurableTaskSchedulerClient(**DTS, **kw), "durabletask-client"),
    ],
)
def test_default_logger_is_a_private_stderr_logger_at_info(make: Any, name: str) -> None:
    first, second = make()._logger, make()._logger
    assert first.name == name and first is not second and name not in logging.Logger.manager.loggerDict
    assert first.level == logging.NOTSET
    [handler] = first.handlers
    assert type(handler) is logging.StreamHandler and handler.level == logging.INFO
    assert handler.formatter is not None and "%(name)s %(levelname)s" in str(handler.formatter._fmt)


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: client.TaskHubGrpcClient(**kw),
        lambda **kw: client.AsyncTaskHubGrpcClient(**kw),
        lambda **kw: DurableTaskSchedulerClient(**DTS, **kw),
        lambda **kw: worker.TaskHubGrpcWorker(**kw),
    ],
)
def test_log_handler_and_formatter_are_deprecated_at_the_callers_line(make: Any) -> None:
    handler = logging.NullHandler()
    with pytest.warns(DeprecationWarning, match="'log_handler' and 'log_formatter' are deprecated") as caught:
        made = make(log_handler=handler)
    assert [w.filename for w in caught] == [__file__]
    assert made._logger.handlers == [handler]
    with pytest.warns(DeprecationWarning, match="deprecated"):
        make(log_formatter=logging.Formatter("%(message)s"))
    mine = logging.getLogger("durabletask-client-tests")
    assert make(logger=mine)._logger is mine


@pytest.mark.adversarial
def test_reads_log_at_debug_and_changes_at_info_so_a_polling_client_stays_quiet(
    sidecar: SidecarServer, caplog: Any
) -> None:
    log = logging.getLogger("durabletask-client-tests")
    with client.TaskHubGrpcClient(host_address=sidecar.address, logger=log) as c, caplog.at_level(logging.DEBUG):
        for _ in range(20):  # a caller polling for a state change
            c.get_orchestration_state("order-7")
        c.raise_orchestration_event("order-7", "approved")
        c.terminate_orchestration("order-7")
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert info == ["RaiseEvent for 'order-7'", "TerminateInstance for 'order-7'"]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug.count("GetInstance for 'order-7'") == 20


@pytest.mark.adversarial
async def test_the_async_client_logs_reads_at_debug_too(sidecar: SidecarServer, caplog: Any) -> None:
    log = logging.getLogger("durabletask-client-tests")
    async with client.AsyncTaskHubGrpcClient(host_address=sidecar.address, logger=log) as c:
        with caplog.at_level(logging.DEBUG):
            await c.get_orchestration_state("order-8")
            await c.suspend_orchestration("order-8")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == ["SuspendInstance for 'order-8'"]
    assert "GetInstance for 'order-8'" in [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
