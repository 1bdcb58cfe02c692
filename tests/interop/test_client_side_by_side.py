"""Client and worker behaviour beyond the scenarios, probed under both SDKs (``peer_scripts/client_probes.py``).

Each probe runs in a fresh process: Microsoft's SDK from the peer venv, ours from the repository, both against our
emulator where a server is needed. docs/conformance.md records what each shows.
"""

from __future__ import annotations

import sys
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from . import probes
from .conftest import ROOT, our_env, peer_env

pytestmark = [
    pytest.mark.interop,
    pytest.mark.local_only("compares both SDKs' plain clients on an emulator of its own"),
]

PROBES = probes.PEER_SCRIPTS / "client_probes.py"
probe = partial(probes.probe, PROBES)
side_by_side = partial(probes.side_by_side, PROBES)


def hub() -> str:
    return f"probe{uuid.uuid4().hex[:10]}"


def test_a_sync_client_inside_a_running_event_loop_blocks_and_works(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = side_by_side(peer_py, "loop", f"localhost:{emulator_port}", hub())
    assert theirs == ours == {"status": "PENDING"}


def test_tags_show_what_the_caller_passed(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = side_by_side(peer_py, "tags", f"localhost:{emulator_port}", hub())
    # Microsoft's OrchestrationState has no tags; its history shows the start event's tags, None without any.
    assert theirs == {
        "tagged": {"state_tags": "<no such attribute>", "history_tags": [{"team": "ops", "tier": "1"}]},
        "untagged": {"state_tags": "<no such attribute>", "history_tags": [None]},
    }
    for label in ("tagged", "untagged"):
        assert ours[label]["history_tags"] == theirs[label]["history_tags"]
        assert [ours[label]["state_tags"]] == theirs[label]["history_tags"]


def test_default_loggers_and_deprecated_logging_keywords(peer_py: Path) -> None:
    theirs, ours = side_by_side(peer_py, "logs")
    assert set(ours) == set(theirs)
    for name in theirs:
        # Both warn once for each deprecated keyword, at the caller's line, and never for 'logger'.
        assert ours[name]["warnings"] == theirs[name]["warnings"] == [["DeprecationWarning", PROBES.name, True]] * 2
        mine, peer = ours[name]["default"], theirs[name]["default"]
        if name.endswith("worker"):
            # Our worker also sets INFO on its logger so that debug records are not built only to be dropped.
            assert (mine.pop("level"), peer.pop("level")) == (20, 0)
        assert mine == peer, name


def test_channel_given_with_a_task_hub_metadata_or_interceptors(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = side_by_side(peer_py, "channel", f"localhost:{emulator_port}", hub())
    # Microsoft's SDK drops the task hub (and token), metadata and interceptors when given a channel.
    assert theirs == {
        "dts_worker": "still PENDING after 5 s",
        "plain_worker_with_metadata": "still PENDING after 5 s",
        "dts_client_start_is_in_the_named_hub": False,
        "dts_async_client": "started in another hub",
    }
    # Ours applies them where gRPC can wrap the channel, and refuses the asyncio channel it cannot wrap.
    assert ours == {
        "dts_worker": "COMPLETED",
        "plain_worker_with_metadata": "COMPLETED",
        "dts_client_start_is_in_the_named_hub": True,
        "dts_async_client": "refused with ValueError",
    }


def test_invocations_per_turn_with_extended_sessions_off_and_on(
    peer_py: Path, emulator_port: int, tmp_path: Path
) -> None:
    address = f"localhost:{emulator_port}"

    def run(python: Path | str, env: dict[str, str], cwd: str, label: str, *option: str) -> Any:
        counter = {"PROBE_COUNTER": str(tmp_path / label)}
        return probe(python, {**env, **counter}, cwd, "invocations", address, hub(), *option)

    theirs = run(peer_py, peer_env(), "/", "theirs")
    ours_off = run(sys.executable, our_env(), str(ROOT), "ours-off", "off")
    ours_default = run(sys.executable, our_env(), str(ROOT), "ours-default")
    # Four turns (start, then each of three activity results): Microsoft's SDK calls the function once per turn,
    # replaying from the start; ours does the same with extended sessions off.
    assert theirs == ours_off == {"output": 3, "turns": 4, "calls": 4}
    # With extended sessions (our default) the live orchestration resumes: one call for the whole run.
    assert ours_default == {"output": 3, "turns": 4, "calls": 1}


def _severity(records: list[list[Any]]) -> list[tuple[str, str | None]]:
    """(level, exception logged with its traceback) of the records above INFO."""
    return [(level, error) for level, error, _ in records if level not in ("DEBUG", "INFO")]


def test_failures_are_logged_at_microsofts_levels(peer_py: Path, emulator_port: int) -> None:
    address = f"localhost:{emulator_port}"
    theirs = probes.probe(PROBES, peer_py, peer_env(), "/", "failure_logs", address, hub())
    # Extended sessions off: the orchestrator that raises while replaying must replay, as in Microsoft's worker.
    ours = probes.probe(PROBES, sys.executable, our_env(), str(ROOT), "failure_logs", address, hub(), "off")
    assert set(ours) == set(theirs)
    for case in theirs:
        assert ours[case]["status"] == theirs[case]["status"] == "FAILED", case
    # A failed entity operation: ERROR with the traceback, naming the error, in both.
    assert _severity(theirs["entity"]["records"]) == _severity(ours["entity"]["records"]) == [("ERROR", "ValueError")]
    assert any("entity boom" in text for _, _, text in ours["entity"]["records"])
    # Operations on an entity no code is registered for: ERROR in both; Microsoft's worker raises and logs the
    # error per operation, ours fails the batch without running code and says so once (docs/conformance.md).
    assert _severity(theirs["missing_entity"]["records"]) == [("ERROR", "EntityNotRegisteredError")]
    assert _severity(ours["missing_entity"]["records"]) == [("ERROR", None)]
    # Orchestrations that fail, also while replaying: INFO, without a traceback, in both (ours names the error).
    errors = {"orchestrator": "orchestrator boom", "replay": "replay boom", "missing_orchestrator": "not registered"}
    for case, error in errors.items():
        assert _severity(theirs[case]["records"]) == _severity(ours[case]["records"]) == [], case
        assert any("completed with status: FAILED" in text for _, _, text in theirs[case]["records"]), case
        assert [(level, error in text) for level, _, text in ours[case]["records"]] == [("INFO", True)], case
    # A failed activity: Microsoft's worker logs nothing for it, ours one WARNING line (docs/conformance.md).
    for case in ("activity", "missing_activity"):
        assert _severity(theirs[case]["records"]) == [], case
        assert _severity(ours[case]["records"]) == [("WARNING", None)], case
