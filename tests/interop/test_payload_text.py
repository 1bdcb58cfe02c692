"""Payload text: both SDKs write the same JSON for the same value, and each reads what the other wrote.

The corpus (``payload_corpus.py``) is encoded here and by Microsoft's ``JsonDataConverter`` in a
subprocess; the texts must be byte-identical. Each side then decodes the other's text (as written, and
re-written compactly) into the entry's type and writes it again, which must give the same text back.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from durabletask._codec import Codec
from durabletask.serialization import JsonDataConverter

from . import payload_corpus

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent

_PEER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import payload_corpus
from durabletask.serialization import JsonDataConverter

converter = JsonDataConverter()
ours = json.loads(sys.stdin.read())
out = {}
for name, value, target in payload_corpus.corpus(plain_models=True):
    theirs = converter.serialize(value)
    read = converter.deserialize(ours[name], target)
    compact = ours[name] and json.dumps(json.loads(ours[name]), separators=(",", ":"), ensure_ascii=False)
    read_compact = converter.deserialize(compact, target)
    out[name] = {"text": theirs, "again": converter.serialize(read), "type": type(read).__name__,
                 "again_compact": converter.serialize(read_compact)}
legacy = converter.deserialize(sys.argv[2])
out["legacy"] = {"type": type(legacy).__name__, "inner": type(legacy.b).__name__, "vars": repr(legacy)}
print(json.dumps(out))
"""

CORPUS = payload_corpus.corpus(plain_models=False)
# What an older SDK generation wrote for objects: both SDKs still read it as SimpleNamespace.
LEGACY = '{"__durabletask_autoobject__": true, "a": 1, "b": {"__durabletask_autoobject__": true, "c": "é"}}'

NAMES = [name for name, _, _ in CORPUS]


def compact(text: str | None) -> str | None:
    return text and json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


@pytest.fixture(scope="module")
def ours() -> dict[str, str | None]:
    converter = JsonDataConverter()
    return {name: converter.serialize(value) for name, value, _ in CORPUS}


@pytest.fixture(scope="module")
def theirs(peer_py: Path, ours: dict[str, str | None]) -> dict[str, Any]:
    done = subprocess.run(
        [str(peer_py), "-c", _PEER, str(HERE), LEGACY],
        input=json.dumps(ours),
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


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_same_text_as_microsofts_converter(name: str, ours: dict[str, str | None], theirs: dict[str, Any]) -> None:
    value = dict((n, v) for n, v, _ in CORPUS)[name]
    assert ours[name] == theirs[name]["text"]
    # The replay and worker paths use the codec without a converter: the same text.
    assert Codec().encode(value, "payload") == theirs[name]["text"]


@pytest.mark.parametrize("name", NAMES)
def test_each_reads_the_others_text(name: str, ours: dict[str, str | None], theirs: dict[str, Any]) -> None:
    target = dict((n, t) for n, _, t in CORPUS)[name]
    converter = JsonDataConverter()
    text = theirs[name]["text"]
    for written in (text, compact(text)):
        read = converter.deserialize(written, target)
        assert converter.serialize(read) == text
        assert Codec().encode(Codec().decode(written, target), "payload") == text
        if isinstance(target, type):
            assert isinstance(read, target)
            assert isinstance(Codec().decode(written, target), target)
    assert theirs[name]["again"] == ours[name]
    assert theirs[name]["again_compact"] == ours[name]
    if isinstance(target, type) and name not in ("pydantic model", "nested pydantic model"):
        assert theirs[name]["type"] == target.__name__


def test_legacy_auto_object_marker_reads_as_simple_namespace(theirs: dict[str, Any]) -> None:
    for read in (JsonDataConverter().deserialize(LEGACY), Codec().decode(LEGACY)):
        assert {"type": type(read).__name__, "inner": type(read.b).__name__, "vars": repr(read)} == theirs["legacy"]
    # Asked for a type, the marker is dropped and the rest is rebuilt.
    assert payload_corpus.Point(1, 2) == JsonDataConverter().deserialize(
        '{"__durabletask_autoobject__": true, "x": 1, "y": 2}', payload_corpus.Point
    )
