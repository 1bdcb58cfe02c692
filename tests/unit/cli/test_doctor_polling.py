"""``durabletask doctor`` reports what the opt-in gRPC client thread polling would do in this environment."""

from __future__ import annotations

import io
import json

import pytest

from durabletask._cli.launch import main


def _doctor(*args: str) -> str:
    out = io.StringIO()
    main(["doctor", *args], stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_report_names_the_opt_in_and_what_it_would_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRPC_EXPERIMENTS", raising=False)
    text = _doctor()
    line = next(line for line in text.splitlines() if line.startswith("gRPC client thread polling"))
    assert "durabletask.grpc_options.enable_thread_polling()" in line
    assert "a call would turn it on" in line
    found = json.loads(_doctor("--json"))["grpc_client_polling"]
    assert found["state"] == "APPLIED"
    assert found["environment"] is None
    assert found["verified_series"] == ["1.85.x"]


def test_a_setting_of_the_environment_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRPC_EXPERIMENTS", "")
    found = json.loads(_doctor("--json"))["grpc_client_polling"]
    assert found["state"] == "CHOSEN_BY_ENVIRONMENT"
    assert found["environment"] == ""
    assert "GRPC_EXPERIMENTS=''" in _doctor()


def test_a_grpcio_it_was_not_verified_on_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from durabletask import _grpc_polling

    monkeypatch.delenv("GRPC_EXPERIMENTS", raising=False)
    monkeypatch.setattr(_grpc_polling, "VERIFIED_SERIES", ("0.0.",))
    found = json.loads(_doctor("--json"))["grpc_client_polling"]
    assert found["state"] == "UNVERIFIED_GRPC"
    assert "not verified" in found["note"]
