"""The store's rules without I/O: where items live (entity IDs within DTS's 100 characters, distinct per item,
found under their prefixes), which namespaces match a condition, and what a filter keeps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durabletask.extensions.langgraph._server import store_model as model
from tests.conftest import fuzz_examples

_LABEL = st.text(st.characters(blacklist_characters=".\x00", blacklist_categories=("Cs",)), min_size=1, max_size=40)
_NAMESPACE = st.lists(_LABEL, min_size=1, max_size=model.NAMESPACE_MAX_LABELS)
_KEY = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1, max_size=60)


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(namespace=_NAMESPACE, key=_KEY, other=_KEY, cut=st.integers(min_value=0, max_value=model.NAMESPACE_MAX_LABELS))
def test_an_items_entity_is_short_distinct_and_under_each_of_its_prefixes(
    namespace: list[str], key: str, other: str, cut: int
) -> None:
    entity = model.item_entity(namespace, key)
    assert len(str(entity)) <= 100
    assert str(entity).startswith(model.entity_prefix(namespace[:cut]))
    if other != key:
        assert model.item_entity(namespace, other) != entity
    assert model.item_entity([*namespace[:-1], namespace[-1] + "x"], key) != entity


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(namespace=_NAMESPACE, data=st.data())
def test_a_namespace_matches_its_own_prefixes_and_suffixes_with_wildcards(
    namespace: list[str], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(namespace)))
    head, tail = namespace[:cut], namespace[len(namespace) - cut :]
    stars = data.draw(st.lists(st.booleans(), min_size=cut, max_size=cut))
    assert model.matches_condition(namespace, head)
    assert model.matches_condition(namespace, tail, suffix=True)
    assert model.matches_condition(namespace, ["*" if s else x for s, x in zip(stars, head, strict=True)])
    assert not model.matches_condition(namespace, [*namespace, "more"])


def test_list_namespaces_cuts_at_the_depth_and_sorts() -> None:
    found = [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)]
    assert model.list_namespaces(found, prefix=("a",), suffix=None, max_depth=2) == [["a", "b"], ["a", "x"]]
    assert model.list_namespaces(found, prefix=None, suffix=("*", "d"), max_depth=None) == [["a", "b", "d"]]


@pytest.mark.parametrize(
    ("conditions", "kept"),
    [
        ({"kind": "a"}, True),
        ({"kind": "b"}, False),
        ({"n": {"$gt": 1, "$lte": 2}}, True),
        ({"n": {"$lt": 2}}, False),
        ({"n": {"$ne": 2}}, False),
        ({"n": {"$gt": "x"}}, False),  # values that do not order never match
        ({"tags": ["x", "y"]}, True),
        ({"missing": None}, True),
    ],
)
def test_a_filter_keeps_what_langgraphs_in_memory_store_keeps(conditions: dict[str, object], kept: bool) -> None:
    assert model.matches_filter({"kind": "a", "n": 2, "tags": ["x", "y"]}, conditions) is kept


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (lambda v: model.check_value(v), {"x": float("nan")}, "field 'value' is not JSON"),
        (lambda v: model.check_value(v), {"x": object()}, "field 'value' is not JSON"),
        (lambda v: model.check_ttl(v), float("nan"), "field 'ttl'"),
        (lambda v: model.check_ttl(v), True, "field 'ttl'"),
        (lambda v: model.check_filter(v), {"n": {"$in": [1]}}, "operator '$in'"),
        (lambda v: model.check_namespace(v, "namespace"), ("a", "\x00"), "NUL"),
        (lambda v: model.check_key(v), "k\x00", "NUL"),
        (lambda v: model.check_namespace(v, "namespace"), ("a", "\ud800"), r"'namespace\[1\]' holds a lone surrogate"),
        (lambda v: model.check_key(v), "k\udfff", "field 'key' holds a lone surrogate"),
    ],
)
def test_bad_values_are_refused_naming_the_field(check: object, value: object, message: str) -> None:
    with pytest.raises(model.StoreInputError, match=message.replace("$", r"\$")):
        check(value)  # type: ignore[operator]
