"""Every sample runs with one command on the embedded emulator and reports success.

With ``--backend`` each sample runs against that endpoint instead, given ``--connection-string`` as a user would,
on a task hub of its own (samples use fixed instance IDs), which is removed or emptied afterwards.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.external.plugin import taskhubs

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
# What each sample must print, beyond exiting 0: evidence that it showed what it is about.
EXPECTED = {
    "demo.py": ["status: COMPLETED", "history:"],
    "async_order.py": [
        '"shipments": ["shipped book", "shipped lamp"], "gift_wrap": true',
        '"gift_wrap": false',
        "impatient_order: FAILED: orchestrator 'impatient_order' awaited asyncio.tasks.sleep()",
    ],
    "function_chaining.py": ['COMPLETED ["Hello, Tokyo!", "Hello, Seattle!", "Hello, London!"]'],
    "fan_out_fan_in.py": ['COMPLETED {"documents": 25, "words": 325}'],
    "human_interaction.py": ['"approved_by": "alice"', '"approved_by": "director"', '"escalated": true'],
    "specialist_workers.py": ["shipping specialist down: RUNNING, waiting on ['ship_order']", "COMPLETED"],
    "version_migration.py": [
        'batch-a: COMPLETED {"count": 120, "served_by": "v1',
        'batch-b: COMPLETED {"count": 250, "served_by": "v2',
        '"migrated": true',
        'batch-c: COMPLETED {"count": 75, "served_by": "v2',
    ],
    "durable_agent.py": [
        'agent-alice: COMPLETED {"status": "filed"',
        'agent-bob: COMPLETED {"status": "cancelled"',
        "agent-bob:withdraw:payslip",
    ],
    "rewind_etl.py": ["first run: FAILED", "after rewind: COMPLETED", "'extract': 1, 'load': 2, 'transform': 1"],
    "carrier_attach.py": ["[run-2]", "attached instance review-run", "each review ran to completion exactly once"],
    "entities_bank.py": ['"declined"', "balance 80", "balance 70"],
    "tracing_order.py": [
        "13 spans",
        "POST /orders [server]",
        "\n    orchestration:process_order [server]",
        "\n        activity:ship [server]",
    ],
    "nightly_report.py": [
        "night 1: nightly-sales-report-2030-03-02T02:00:00+00:00 COMPLETED",
        "operator: paused nightly-sales-report",
        "next run 2030-03-05T02:00:00+00:00",
        "night 4: nightly-sales-report-2030-03-05T02:00:00+00:00 COMPLETED",
        "reports started: 3 (none during the maintenance night)",
    ],
    "replay_check_deploy.py": [
        "release 2a: BLOCKED",
        "history records create_timer() with ID 2, but the current code calls call_activity('fraud_check')",
        "at replay_check_deploy.py:",
        "release 2b: OK",
        "release 2c: OK",
        "release 2c-unversioned: BLOCKED",
        "replay_check_deploy:release_2a --status RUNNING  -> exit code 1",
        "replay_check_deploy:release_2b --status RUNNING  -> exit code 0",
        "sub-fast continued as new with version 2; fraud checks run: ['sub-fast']",
    ],
    "large_context_agent.py": [
        "agent-large-context: COMPLETED, answer 'clause 3 applies (3 notes)', context of 5243348 bytes",
        "payloads as tokens, e.g. blob:v1:durabletask-payloads:agent-large-context/",
    ],
    "agent_framework_agents.py": [
        "weather agent: Oslo: light rain and 7 degrees.",
        "DurableAgentStateFunctionCallContent, DurableAgentStateFunctionResultContent",
        'trip-oslo: COMPLETED {"forecast": "Oslo: light rain and 7 degrees.", "plan": "Oslo: morning at the fjord',
        'approval-oslo: COMPLETED {"status": "approved", "by": "alice", "rounds": 2',
        "the planner revised with 2 earlier messages in its conversation",
        "desk-plan: output ['Oslo: morning at the fjord, lunch at the harbour, evening concert. (published, approved",
        "with SIGKILL during the planner's model call",
        'trip-bergen: COMPLETED {"forecast": "Bergen: clear skies and 11 degrees.", "plan": "Bergen:',
        "no completed model call was repeated; only the interrupted one ran again",
        "all scenarios completed as expected",
    ],
    "long_extraction.py": [
        "annual-report: pages",
        'extract-flaky: COMPLETED {"pages": 120, "resumed_from": ',
        "archive: cancellation seen at page",
        'extract-cancelled: COMPLETED "cancelled by the user"',
        "the retry resumed from its last heartbeat",
    ],
    "streaming_agent.py": [
        "first connection: 4 tokens, then the connection dropped",
        "reconnecting with Last-Event-ID: 0000000000",
        "statuses: ['thinking', 'answered']",
        "ended with: $end",
        "reassembled answer: Durable streams keep every token, so a client that reconnects misses nothing.",
        "every token arrived exactly once across the reconnection",
    ],
    "langgraph_agent.py": [
        "killed worker pid",
        "ticket-42 waits for the manager: {'approve refund': {'order_id': 42, 'amount': 30}}",
        "activities in flight: []",
        "ticket-42 answer: Done: refunded 30 euros for order 42.",
        "model calls: step 0: 1, step 1: 1, step 2: 1",
        "tool calls: issue_refund: 1, lookup_order: 2",
        "under 1 idempotency key",
        "no model call was repeated",
    ],
}
# Samples that need a package the dev environment does not install (the module they import, and where they run).
NEEDS = {
    "agent_framework_agents.py": (
        "agent_framework_durabletask",
        "needs agent-framework-durabletask beside the SDK; tests/system/install/test_agent_framework.py runs it in a "
        "venv built from this checkout's wheels",
    ),
}
# Against an external backend a sample runs on the real clock, so its times are not known in advance.
EXPECTED_EXTERNAL = {
    "nightly_report.py": [
        "night 1: nightly-sales-report-",
        "operator: paused nightly-sales-report",
        "night 4: nightly-sales-report-",
        "reports started: 3 (none during the maintenance night)",
    ],
}


# A line of gRPC's own C++ log (abseil format), e.g. "I1201 21:26:49.459732   21173 chttp2_transport.cc:1403] ...".
GRPC_CORE_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+\.cc:\d+\]", re.MULTILINE)


def _samples() -> list[str]:
    return sorted(p.name for p in SAMPLES.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.local_only("reads the samples folder")
def test_every_sample_is_covered() -> None:
    assert set(_samples()) <= set(EXPECTED), "add the new sample's expected output to EXPECTED"


@pytest.mark.whole_taskhub("samples use fixed instance IDs and do not purge what they made")
@pytest.mark.parametrize("name", _samples())
def test_sample_runs(name: str, request: pytest.FixtureRequest) -> None:
    if name in NEEDS and importlib.util.find_spec(NEEDS[name][0]) is None:
        pytest.skip(NEEDS[name][1])
    env = {k: v for k, v in os.environ.items() if k != "DURABLETASK_CONNECTION_STRING"}
    hubs = taskhubs(request.config)
    if hubs is None:
        proc = subprocess.run(
            [sys.executable, str(SAMPLES / name)], cwd=SAMPLES, capture_output=True, text=True, timeout=150, env=env
        )
    else:
        taskhub = hubs.open()
        try:
            with hubs.emptied_afterwards(taskhub):
                args = ["--connection-string", hubs.backend.connection_string(taskhub)]
                proc = subprocess.run(
                    [sys.executable, str(SAMPLES / name), *args],
                    cwd=SAMPLES,
                    capture_output=True,
                    text=True,
                    timeout=150,
                    env=hubs.backend.child_env(env),
                )
        finally:
            hubs.release(taskhub)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    expected = EXPECTED_EXTERNAL.get(name, EXPECTED[name]) if hubs is not None else EXPECTED[name]
    for needle in expected:
        assert needle in proc.stdout, f"{name} did not print {needle!r}:\n{proc.stdout}"
    if hubs is None:
        # The embedded emulator shuts down gracefully: no channel logs a GOAWAY that cancelled its calls.
        assert not GRPC_CORE_LOG.findall(proc.stderr), f"{name} let gRPC log:\n{proc.stderr[-3000:]}"
