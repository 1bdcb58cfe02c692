"""Option objects side by side with Microsoft's: defaults, accepted and refused values, and mutability.

The same probe runs here and in the peer's interpreter; the results must match except for the values listed in
``REFUSED_HERE`` (refused by our constructor, stored by Microsoft's and failing later in its worker).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

_PROBE = r"""
import importlib, json, sys

CLASSES = {
    "ConcurrencyOptions": ("durabletask.worker", [
        "maximum_concurrent_activity_work_items", "maximum_concurrent_orchestration_work_items",
        "maximum_concurrent_entity_work_items", "maximum_thread_pool_workers"]),
    "VersioningOptions": ("durabletask.worker", ["version", "default_version", "match_strategy", "failure_strategy"]),
    "GrpcRetryPolicyOptions": ("durabletask.grpc_options", [
        "max_attempts", "initial_backoff_seconds", "max_backoff_seconds", "backoff_multiplier",
        "retryable_status_codes"]),
    "GrpcChannelOptions": ("durabletask.grpc_options", [
        "max_receive_message_length", "max_send_message_length", "keepalive_time_ms", "keepalive_timeout_ms",
        "keepalive_permit_without_calls", "retry_policy", "raw_options"]),
    "GrpcWorkerResiliencyOptions": ("durabletask.grpc_options", [
        "hello_timeout_seconds", "silent_disconnect_timeout_seconds", "channel_recreate_failure_threshold",
        "reconnect_backoff_base_seconds", "reconnect_backoff_cap_seconds"]),
    "GrpcClientResiliencyOptions": ("durabletask.grpc_options", [
        "channel_recreate_failure_threshold", "min_recreate_interval_seconds"]),
}

def load(name):
    module, fields = CLASSES[name]
    return getattr(importlib.import_module(module), name), fields

def state(obj, fields):
    return {f: repr(getattr(obj, f)) for f in fields}

def build(name, args, kwargs):
    cls, fields = load(name)
    try:
        return {"state": state(cls(*args, **kwargs), fields)}
    except Exception as error:
        return {"error": type(error).__name__}

def mutate(name, field, value):
    cls, fields = load(name)
    obj = cls()
    try:
        setattr(obj, field, value)
    except Exception as error:
        return {"error": type(error).__name__}
    return {"state": state(obj, fields)}

def probe(cases):
    out = {}
    for key, (kind, name, a, b) in cases.items():
        out[key] = build(name, a, b) if kind == "build" else mutate(name, a, b)
    return out

if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
"""

_CASES: list[tuple[str, str, Any, Any]] = [
    ("build", "ConcurrencyOptions", [], {}),
    ("build", "ConcurrencyOptions", [3, 4, 5, 6], {}),
    ("build", "ConcurrencyOptions", [], {"maximum_thread_pool_workers": 2}),
    ("build", "VersioningOptions", [], {}),
    ("build", "VersioningOptions", ["2.0", "1.0"], {}),
    ("build", "VersioningOptions", [], {"version": "1", "default_version": None}),
    ("build", "GrpcRetryPolicyOptions", [], {}),
    (
        "build",
        "GrpcRetryPolicyOptions",
        [],
        {
            "max_attempts": 5,
            "initial_backoff_seconds": 0.1,
            "max_backoff_seconds": 1,
            "retryable_status_codes": ["INTERNAL"],
        },
    ),
    ("build", "GrpcRetryPolicyOptions", [], {"max_attempts": 1}),
    ("build", "GrpcRetryPolicyOptions", [], {"initial_backoff_seconds": 0}),
    ("build", "GrpcRetryPolicyOptions", [], {"initial_backoff_seconds": 1e-12}),
    ("build", "GrpcRetryPolicyOptions", [], {"max_backoff_seconds": 0.01}),
    ("build", "GrpcRetryPolicyOptions", [], {"backoff_multiplier": 0}),
    ("build", "GrpcRetryPolicyOptions", [], {"retryable_status_codes": []}),
    ("build", "GrpcRetryPolicyOptions", [4], {}),
    ("build", "GrpcChannelOptions", [], {}),
    (
        "build",
        "GrpcChannelOptions",
        [],
        {"max_receive_message_length": 1, "keepalive_permit_without_calls": True, "raw_options": [["a", 1]]},
    ),
    ("build", "GrpcWorkerResiliencyOptions", [], {}),
    ("build", "GrpcWorkerResiliencyOptions", [], {"hello_timeout_seconds": 0}),
    ("build", "GrpcWorkerResiliencyOptions", [], {"silent_disconnect_timeout_seconds": 0}),
    ("build", "GrpcWorkerResiliencyOptions", [], {"silent_disconnect_timeout_seconds": -1}),
    ("build", "GrpcWorkerResiliencyOptions", [], {"channel_recreate_failure_threshold": -1}),
    (
        "build",
        "GrpcWorkerResiliencyOptions",
        [],
        {"reconnect_backoff_base_seconds": 5, "reconnect_backoff_cap_seconds": 2},
    ),
    ("build", "GrpcClientResiliencyOptions", [], {}),
    ("build", "GrpcClientResiliencyOptions", [], {"channel_recreate_failure_threshold": 0}),
    ("build", "GrpcClientResiliencyOptions", [], {"min_recreate_interval_seconds": -0.5}),
    ("build", "GrpcClientResiliencyOptions", [1], {}),
    ("mutate", "ConcurrencyOptions", "maximum_concurrent_activity_work_items", 9),
    ("mutate", "ConcurrencyOptions", "maximum_thread_pool_workers", 3),
    ("mutate", "VersioningOptions", "version", "3.0"),
    ("mutate", "VersioningOptions", "default_version", "2.5"),
    ("mutate", "GrpcRetryPolicyOptions", "max_attempts", 7),
    ("mutate", "GrpcRetryPolicyOptions", "retryable_status_codes", ["UNAVAILABLE", "INTERNAL"]),
    ("mutate", "GrpcChannelOptions", "keepalive_time_ms", 1000),
    ("mutate", "GrpcChannelOptions", "max_send_message_length", 2048),
    ("mutate", "GrpcWorkerResiliencyOptions", "hello_timeout_seconds", 5.0),
    ("mutate", "GrpcClientResiliencyOptions", "min_recreate_interval_seconds", 1.0),
    ("mutate", "GrpcChannelOptions", "no_such_option", 1),
]
CASES = {json.dumps(case): case for case in _CASES}

# Stored by Microsoft's constructor, refused by ours: its worker later fails on them (ThreadPoolExecutor,
# asyncio.Semaphore) or, with 0, never runs work of that kind.
REFUSED_HERE: dict[str, tuple[str, str, Any, Any]] = {
    json.dumps(case): case
    for case in [
        ("build", "ConcurrencyOptions", [0], {}),
        ("build", "ConcurrencyOptions", [], {"maximum_thread_pool_workers": -1}),
        ("build", "ConcurrencyOptions", [1.5], {}),
        ("build", "ConcurrencyOptions", [True], {}),
        ("mutate", "ConcurrencyOptions", "maximum_concurrent_entity_work_items", 0),
    ]
}


def run_ours(cases: dict[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "probe"}
    exec(_PROBE, namespace)
    result: dict[str, Any] = namespace["probe"](cases)
    return result


@pytest.fixture(scope="module")
def theirs(peer_py: Path) -> dict[str, Any]:
    cases = {**CASES, **REFUSED_HERE}
    done = subprocess.run(
        [str(peer_py), "-c", _PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("key", list(CASES))
def test_same_outcome_as_microsofts_options(key: str, theirs: dict[str, Any]) -> None:
    assert run_ours({key: CASES[key]})[key] == theirs[key]


@pytest.mark.parametrize("key", list(REFUSED_HERE))
def test_values_microsofts_worker_cannot_use_are_refused_when_given(key: str, theirs: dict[str, Any]) -> None:
    assert "state" in theirs[key]
    assert run_ours({key: REFUSED_HERE[key]})[key] == {"error": "ValueError"}
