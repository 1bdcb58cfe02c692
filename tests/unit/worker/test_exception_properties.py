"""ExceptionPropertiesProvider: applied to orchestrator, activity and entity failures and their causes."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import proto_from_exception
from durabletask._worker.entity_runner import EntityRunner
from durabletask._worker.registry import Registry
from durabletask.exception_properties import ExceptionPropertiesProvider, properties_reader
from tests.unit.replay.history import History, failed_with, run

LOG = logging.getLogger("durabletask-exception-properties-tests")


class Provider:
    def get_exception_properties(self, exception: Exception) -> Any:
        if isinstance(exception, LookupError):
            return {"when": datetime(2025, 1, 2), "count": 3, "items": ("a", 1), "none": None}
        if isinstance(exception, OSError):
            return "not a mapping"
        if isinstance(exception, ArithmeticError):
            raise RuntimeError("provider bug")
        return None


def test_the_protocol_is_what_microsofts_module_names() -> None:
    provider: ExceptionPropertiesProvider = Provider()
    assert provider.get_exception_properties(KeyError("k")) is not None


def test_values_become_protobuf_values_and_others_their_text() -> None:
    read = properties_reader(Provider(), LOG)
    assert read is not None
    found = read(KeyError("k"))
    assert found is not None
    assert found["when"].string_value == "2025-01-02 00:00:00"
    assert found["count"].number_value == 3
    assert [v.WhichOneof("kind") for v in found["items"].list_value.values] == ["string_value", "number_value"]
    assert found["none"].WhichOneof("kind") == "null_value"
    assert properties_reader(None, LOG) is None


@pytest.mark.parametrize("error", [OSError("io"), ZeroDivisionError("zero")])
def test_a_faulty_provider_records_no_properties_and_warns(error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    read = properties_reader(Provider(), LOG)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        details = proto_from_exception(error, properties_of=read)
    assert details.errorMessage == str(error) and not details.properties
    assert "exception properties" in caplog.text


def test_every_exception_of_the_cause_chain_is_asked() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as error:
        details = proto_from_exception(error, properties_of=properties_reader(Provider(), LOG))
    assert not details.properties
    assert details.innerFailure.properties["count"].number_value == 3


def test_an_orchestrator_failure_carries_the_properties() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> None:
        raise IndexError("no such page")

    result = run(History().new().started("orch"), orch, exception_properties_provider=Provider())
    assert failed_with(result).properties["count"].number_value == 3
    assert not failed_with(run(History().new().started("orch"), orch)).properties


def test_an_entity_operation_failure_carries_the_properties() -> None:
    def counter(ctx: Any, _: Any) -> None:
        raise KeyError("missing")

    registry = Registry()
    registry.add_entity(counter)
    batch = pb.EntityBatchRequest(instanceId="@counter@c1", operations=[pb.OperationRequest(operation="add")])
    result = EntityRunner(registry, logger=LOG, exception_properties_provider=Provider()).run(batch, [], "t")
    assert result.results[0].failure.failureDetails.properties["count"].number_value == 3
