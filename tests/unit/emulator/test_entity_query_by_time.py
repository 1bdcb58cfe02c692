"""Entity queries by modification time: a query for what changed lately reads those entities by time.

A worker of the SDK asks once a second which control entities changed in the last seconds, in a task hub that may
hold hundreds of thousands of them. Either way a query is answered, its pages hold exactly the entities that match,
in ID order, whichever index serves it.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtscale_emulator.storage import EntityQueryArgs, EntityRecord, SqliteBackend
from dtscale_emulator.storage.sqlite_entities import FEW_MODIFIED


@pytest.fixture(params=["file", "memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteBackend]:
    store = SqliteBackend(str(tmp_path / "store.db") if request.param == "file" else None)
    yield store
    store.close()


def _fill(backend: SqliteBackend, count: int, seed: int) -> list[EntityRecord]:
    rng = random.Random(seed)
    made = []
    with backend.transaction() as tx:
        for i in range(count):
            name = rng.choice(["@dtscale.activities@", "@counter@"])
            state = None if rng.random() < 0.1 else "{}"
            record = EntityRecord("h", f"{name}{rng.randrange(10**6):06d}-{i}", state, rng.randrange(10_000))
            tx.put_entity(record)
            made.append(record)
        tx.put_entity(EntityRecord("other", "@dtscale.activities@x", "{}", 9_999))
    return made


def _pages(backend: SqliteBackend, args: EntityQueryArgs) -> list[str]:
    found: list[str] = []
    while True:
        with backend.transaction() as tx:
            page = tx.query_entities("h", args)
        found += [e.instance_id for e in page]
        if len(page) < args.limit:
            return found
        args = EntityQueryArgs(**{**args.__dict__, "after_id": page[-1].instance_id})


@pytest.mark.parametrize("since", [9_990, 9_000, 5_000, 0])
def test_pages_hold_exactly_the_matching_entities_in_order(backend: SqliteBackend, since: int) -> None:
    made = _fill(backend, 4 * FEW_MODIFIED, seed=since)
    args = EntityQueryArgs(id_prefix="@dtscale.activities@", modified_from=since, limit=97)
    expected = sorted(
        r.instance_id
        for r in made
        if r.instance_id.startswith("@dtscale.activities@") and r.modified_at >= since and r.state is not None
    )
    assert _pages(backend, args) == expected


def test_every_store_has_the_index_of_modification_times(tmp_path: Path) -> None:
    backend = SqliteBackend(str(tmp_path / "store.db"))
    try:
        _fill(backend, 3 * FEW_MODIFIED, seed=1)
    finally:
        backend.close()
    db = sqlite3.connect(tmp_path / "store.db")
    try:
        # The index exists (also in a store made before it, since the schema is applied at every open).
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "ix_entities_modified" in names
    finally:
        db.close()
