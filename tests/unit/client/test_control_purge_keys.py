"""Which instances may own a control entity key: the rule a purge uses to remove only what no instance needs."""

from __future__ import annotations

import pytest

from durabletask._client.control_purge import owners
from durabletask._replay.activity_control import entity_key

EXECUTION = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("instance_id", ["order-1", "a#b", "a#b#c", "x" * 30])
def test_a_plain_key_names_its_instance(instance_id: str) -> None:
    named, readable = owners(entity_key(instance_id, EXECUTION))
    assert instance_id in named and readable is None
    assert owners(entity_key(instance_id, ""))[0] >= {instance_id}


@pytest.mark.parametrize("instance_id", ["y" * 47, "y" * 60, "short#" + "z" * 50, "y" * 20])
def test_a_digest_key_names_every_instance_its_readable_part_fits(instance_id: str) -> None:
    key = entity_key(instance_id, EXECUTION + EXECUTION)  # long enough to need a digest
    named, readable = owners(key)
    assert readable is not None and len(key) == 80
    # Its instance is either named whole or begins with the readable part.
    assert instance_id in named or instance_id.startswith(readable)


def test_an_instance_whose_id_continues_another_is_not_named_by_its_key() -> None:
    named, _ = owners(entity_key("order", EXECUTION))
    assert "order#extra" not in named and "orde" not in named
