"""The public ``DataConverter`` / ``JsonDataConverter`` and plugging a converter into the executor."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest

from durabletask import _json_codec, task
from durabletask._codec import Codec
from durabletask._errors import PayloadTooLargeError
from durabletask.serialization import DEFAULT_DATA_CONVERTER, DataConverter, JsonDataConverter

from .history import History, output, run


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    corner: Point
    tags: list[str]


def test_json_converter_round_trips_models_and_dataclasses() -> None:
    converter = JsonDataConverter()
    box = Box(Point(x=1, y=2), ["a"])
    text = converter.serialize(box)
    assert text is not None and json.loads(text) == {"corner": {"x": 1, "y": 2}, "tags": ["a"]}
    assert converter.deserialize(text, Box) == box
    assert converter.deserialize(text) == {"corner": {"x": 1, "y": 2}, "tags": ["a"]}


def test_none_and_empty_payloads() -> None:
    assert DEFAULT_DATA_CONVERTER.serialize(None) is None
    assert DEFAULT_DATA_CONVERTER.deserialize(None) is None
    assert DEFAULT_DATA_CONVERTER.deserialize("") is None


def test_reconstruction_is_best_effort() -> None:
    assert JsonDataConverter().deserialize('{"x": "not a number"}', Point) == {"x": "not a number"}
    assert JsonDataConverter().coerce({"x": 3, "y": 4}, Point) == Point(x=3, y=4)


def test_can_reconstruct_models_dataclasses_and_containers_of_them_only() -> None:
    converter = JsonDataConverter()
    assert converter.can_reconstruct(Point)
    assert converter.can_reconstruct(list[Box])
    assert converter.can_reconstruct(Box | None)
    assert not converter.can_reconstruct(int)
    assert not converter.can_reconstruct(dict[str, int])


class Shouting(DataConverter):
    """Stores strings upper-cased, to prove the executor goes through the converter."""

    def serialize(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value.upper() if isinstance(value, str) else value)

    def deserialize(self, data: str | None, target_type: type | None = None) -> Any:
        return None if not data else json.loads(data)

    def coerce(self, value: Any, target_type: type | None = None) -> Any:
        return value


def test_executor_uses_a_configured_converter_and_still_enforces_the_size_limit() -> None:
    def orch(ctx: task.OrchestrationContext, name: str) -> Any:
        ctx.call_activity("a", input=name)
        with pytest.raises(PayloadTooLargeError):
            ctx.call_activity("b", input="q" * (1024 * 1024))
        return f"hi {name}"

    result = run(History().new().started("orch", "bob"), orch, data_converter=Shouting())
    assert result.actions[0].scheduleTask.input.value == '"BOB"'
    assert output(result) == "HI BOB"


def test_the_default_converter_returns_the_raw_value_when_a_from_json_hook_fails() -> None:
    class Strict:
        @classmethod
        def from_json(cls, value: Any) -> Strict:
            raise KeyError("required")

    # Best-effort, as Microsoft's JsonDataConverter: the plain JSON value instead of the hook's error.
    assert JsonDataConverter().deserialize('{"a": 1}', Strict) == {"a": 1}
    assert JsonDataConverter().coerce({"a": 1}, Strict) == {"a": 1}


# Plain JSON types are answered from the parsed value when it already has the type asked for; the fast paths
# of the replay codec must give exactly what the converter gives (tests/interop/test_converter_side_by_side.py
# compares the converter with Microsoft's).
PLAIN_TEXTS = ["5", "-7", "123456789012345678901234567890", "5.0", "2.5", "true", "false", '"5"', '" x "', '""',
               "NaN", "Infinity", "[1, 2]", "[]", '{"a": [1, {"b": null}]}', "{}", " 5", "null"]  # fmt: skip


@pytest.mark.parametrize("target", [int, str, float, bool, dict, list, None])
@pytest.mark.parametrize("text", PLAIN_TEXTS)
def test_the_codecs_fast_paths_decode_as_the_converter_does(target: type | None, text: str) -> None:
    expected = JsonDataConverter().deserialize(text, target)
    for got in (Codec().decode(text, target), JsonDataConverter().coerce(json.loads(text), target)):
        assert type(got) is type(expected)
        assert json.dumps(got) == json.dumps(expected)  # NaN-safe equality


def test_a_value_that_already_has_the_type_is_returned_as_is() -> None:
    # As Microsoft's converter: no copy of a value the caller holds.
    mine: dict[str, Any] = {"a": [1]}
    assert JsonDataConverter().coerce(mine, dict) is mine
    assert _json_codec.coerce("text", str) == "text"


def test_values_json_cannot_hold_raise_type_error_in_microsofts_words() -> None:
    with pytest.raises(TypeError, match=r"^Failed to serialize object of type 'dict' to JSON: Object of type 'set'"):
        JsonDataConverter().serialize({"a": {1}})
    with pytest.raises(TypeError, match=r"^Failed to serialize object of type 'bytes' to JSON"):
        Codec().encode(b"x", "input")


def test_a_legacy_marker_is_dropped_from_a_plain_dict_target() -> None:
    text = json.dumps({"__durabletask_autoobject__": True, "a": 1})
    assert Codec().decode(text, dict) == {"a": 1}
    assert _json_codec.from_json(text, dict) == {"a": 1}
