"""``durabletask.history`` under both SDKs: ``to_dict`` of every event type, and events read from wire messages.

The probe (``peer_scripts/history_probes.py``) builds the same events in each SDK's process and describes the
results with every container's and leaf's type spelled out, so "the same" means the same types too.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from . import probes

pytestmark = [pytest.mark.interop, pytest.mark.local_only("runs both SDKs' history module, no backend")]

side_by_side = partial(probes.side_by_side, probes.PEER_SCRIPTS / "history_probes.py")


@pytest.fixture(scope="module")
def to_dict_results(peer_py: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return side_by_side(peer_py, "to_dict")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wire_results(peer_py: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return side_by_side(peer_py, "from_wire")  # type: ignore[no-any-return]


def test_to_dict_converts_every_event_type_and_value_shape_as_microsofts(
    to_dict_results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = to_dict_results
    assert set(ours) == set(theirs)
    # Every event type is there, with tuples, namedtuples, container subclasses, sets, non-string keys,
    # naive and offset datetimes, nested failure details and nested inputs in its free-form fields.
    assert len(theirs) > 100
    differing = [name for name in theirs if ours[name] != theirs[name]]
    assert differing == []


def test_to_dict_shares_no_mutable_value_with_its_event(
    to_dict_results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = to_dict_results
    for name, result in ours.items():
        if "error" in result:
            # Python 3.11's dataclasses.asdict cannot rebuild a defaultdict; both SDKs raise the same error.
            assert result == theirs[name]
            continue
        assert result["shared"] == {"result_to_event": False, "event_to_result": False}, name


def test_events_read_from_the_wire_are_microsofts_field_for_field(
    wire_results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = wire_results
    assert set(ours) == set(theirs)
    assert ours["no_event_type"] == {"error": {"type": "HistoryEventError", "value_error": True}}
    assert theirs["no_event_type"] == {"error": {"type": "ValueError", "value_error": True}}
    differing = [name for name in theirs if name != "no_event_type" and ours[name] != theirs[name]]
    assert differing == []
    # The legacy entity protocol's messages are plain sent and raised events in both.
    assert ours["legacy_entity_call"]["type"] == "EventSentEvent"
    assert ours["legacy_entity_response"]["type"] == "EventRaisedEvent"
