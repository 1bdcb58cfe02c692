"""What a caller learns from an unexpected failure (an error ID) and what the log keeps; insecure-token warnings."""

from __future__ import annotations

import logging
import sqlite3

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub


def test_an_internal_error_answers_an_id_and_logs_the_detail(
    server: EmulatorServer, stub: HubStub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(hub: str, instance_id: str) -> None:
        raise sqlite3.OperationalError("no such column: secret_col in SELECT * FROM instances (/var/lib/emu.db)")

    monkeypatch.setattr(server.engine, "get", broken)
    with pytest.raises(grpc.RpcError) as err, caplog.at_level(logging.ERROR, "dtscale_emulator"):
        stub.GetInstance(pb.GetInstanceRequest(instanceId="x"))
    details = err.value.details() or ""
    assert err.value.code() == grpc.StatusCode.INTERNAL
    for leak in ("SELECT", "secret_col", "/var/lib", "OperationalError", "sqlite"):
        assert leak not in details
    error_id = details.split("error ")[-1].split(";")[0]
    assert len(error_id) == 12
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None and "secret_col" in str(logged[0].exc_info[1])


@pytest.mark.parametrize(
    ("host", "tls", "warned"), [("0.0.0.0", False, True), ("127.0.0.1", False, False), ("localhost", False, False)]
)
def test_a_token_without_tls_on_an_outside_address_is_warned_about(
    caplog: pytest.LogCaptureFixture, host: str, tls: bool, warned: bool
) -> None:
    with (
        caplog.at_level(logging.WARNING, "dtscale_emulator"),
        EmulatorServer(host=host, port=0, in_memory=True, auth_token="t"),
    ):
        pass
    assert any("clear text" in r.getMessage() for r in caplog.records) == warned


def test_no_warning_without_a_token(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "dtscale_emulator"), EmulatorServer(host="0.0.0.0", port=0, in_memory=True):
        pass
    assert not any("clear text" in r.getMessage() for r in caplog.records)
