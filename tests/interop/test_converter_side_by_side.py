"""``JsonDataConverter`` under both SDKs (``peer_scripts/converter_probes.py``): refusals, rebuilding, fallbacks.

Each case's result is described with every container's and object's type, so the same result means the same
types; a refusal is compared by its built-in class, its message and the message of its cause.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from . import probes

pytestmark = [pytest.mark.interop, pytest.mark.local_only("runs both SDKs' converters, no backend")]

side_by_side = partial(probes.side_by_side, probes.PEER_SCRIPTS / "converter_probes.py")

#: Kept on purpose (docs/conformance.md, (14)): a payload that is not JSON is a ValueError in both, ours names it so.
NOT_JSON = {"deserialize:not_json", "deserialize:not_json_untyped"}


@pytest.fixture(scope="module")
def results(peer_py: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    theirs, ours = side_by_side(peer_py)
    assert set(ours) == set(theirs)
    return theirs, ours


def _cases(results: tuple[dict[str, Any], dict[str, Any]], prefix: str) -> list[tuple[str, Any, Any]]:
    theirs, ours = results
    return [(name, theirs[name], ours[name]) for name in theirs if name.startswith(prefix)]


def test_values_json_cannot_hold_raise_microsofts_type_error(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cases = _cases(results, "serialize:")
    refused = [name for name, theirs, _ in cases if "error" in theirs]
    # bytes, sets, datetimes, arbitrary objects, plain objects without to_json, also nested ones.
    assert len(refused) >= 15
    for name, theirs, ours in cases:
        assert ours == theirs, name
    assert results[1]["serialize:set_in_dict"] == {
        "error": "TypeError",
        "message": "Failed to serialize object of type 'dict' to JSON: Object of type 'set' is not JSON serializable",
        "cause": ["TypeError", "Object of type 'set' is not JSON serializable"],
    }


def test_rebuilding_and_its_fallback_to_the_raw_value_are_microsofts(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    cases = _cases(results, "deserialize:") + _cases(results, "coerce:")
    assert [name for name, theirs, ours in cases if name not in NOT_JSON and ours != theirs] == []
    theirs, ours = results
    # A union of several dataclasses is left as parsed; Optional[T] is rebuilt.
    assert ours["deserialize:union_of_dataclasses"]["ok"][0] == "dict"
    assert ours["deserialize:optional_dataclass"]["ok"][0] == "Point"
    # A dataclass defined in a function, whose string hint cannot be resolved, is built from the raw fields.
    assert ours["deserialize:local_unresolvable_hint"]["ok"][1][0] == [
        "inner",
        ["dict", [[["str", "'value'"], ["int", "1"]]]],
    ]
    # A from_json hook that raises: the raw value.
    assert ours["deserialize:hook_raising"] == {"ok": ["dict", [[["str", "'a'"], ["int", "1"]]]]}
    for name in NOT_JSON:
        assert ours[name]["error"] == theirs[name]["error"] == "ValueError"


def test_which_annotations_the_converter_rebuilds_are_microsofts(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    for name, theirs, ours in _cases(results, "can_reconstruct:"):
        assert ours == theirs, name
