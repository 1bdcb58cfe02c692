"""samples/tracing_order.py with ``--otlp-endpoint``: the application's and the emulator's spans reach a real
OTLP/gRPC collector as one trace."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.otlp_collector import attributes, serve_collector

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "tracing_order.py"
APP_SPANS = 13  # what the sample prints without a collector (tests/system/samples/test_samples.py)


@pytest.mark.local_only("runs the sample on its embedded emulator")
def test_the_sample_sends_its_trace_and_the_emulators_spans_to_a_collector() -> None:
    with serve_collector() as (collector, port):
        endpoint = f"http://127.0.0.1:{port}"
        done = subprocess.run(
            [sys.executable, str(SAMPLE), "--otlp-endpoint", endpoint],
            cwd=SAMPLE.parent, capture_output=True, text=True, timeout=150, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        found = re.search(r"^trace ([0-9a-f]{32}): 13 spans$", done.stdout, re.MULTILINE)
        assert found is not None, done.stdout
        assert f"sent to {endpoint} with the emulator's own spans: open trace {found[1]} there" in done.stdout
        # 13 application spans; per activity (5) and per orchestration turn (at least 3) three emulator spans.
        received = collector.wait_for(int(found[1], 16), APP_SPANS + 3 * (5 + 3))

    app = {span.span_id: span for service, span in received if service == "order-service"}
    emulator = [span for service, span in received if service == "durabletask-emulator"]
    assert len(app) == APP_SPANS and len(app) + len(emulator) == len(received)
    printed = re.findall(r"^ *(\S.*?) \[\w+\]", done.stdout, re.MULTILINE)
    assert sorted(span.name for span in app.values()) == sorted(printed)

    # Every emulator span hangs under a span of the application's trace.
    assert all(span.parent_span_id in app for span in emulator)
    calls = {
        sid for sid, span in app.items() if span.name.startswith("activity:") and span.kind == span.SPAN_KIND_CLIENT
    }
    per_call = collections.Counter(
        (app[span.parent_span_id].name, span.name) for span in emulator if span.parent_span_id in calls
    )
    want = collections.Counter()
    for name, times in (("reserve_inventory", 1), ("charge_payment", 1), ("ship", 3)):
        for phase in ("queue", "dispatch", "commit"):
            want[(f"activity:{name}", f"emulator.{phase}:{name}")] = times
    assert per_call == want
    turns = collections.Counter(span.name for span in emulator if span.parent_span_id not in calls)
    assert set(turns) == {"emulator.queue:process_order", "emulator.dispatch:process_order",
                          "emulator.commit:process_order"}  # fmt: skip
    assert len(set(turns.values())) == 1 and turns["emulator.commit:process_order"] >= 3
    assert {attributes(span)["durabletask.type"] for span in emulator} == {"orchestration", "activity"}
