"""Group commit under injected interleavings: concurrent writers and readers, a disk whose syncs are held for random
spans, one of them (at a random point) failing. Each writer's outcome must be its own: success only once its commit
is synced, the batch's failure for the commits the failed sync held, and for every commit after them the failure that
says why they cannot be saved; a reader is never told of a failure."""

from __future__ import annotations

import asyncio
import errno
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dtscale_emulator.errors import StorageError
from dtscale_emulator.storage import InstanceRecord, SqliteBackend
from dtscale_emulator.storage import group_commit as gc
from dtscale_emulator.storage.group_commit import GroupCommit, track_call

WRITERS = 6
READERS = 3
WRITES_EACH = 25


@dataclass
class ErraticDisk:
    """Syncs held for a random span (some not at all); the ``fail_at``-th fails. Records each sync's start: the
    number of the newest commit synced before it began (the batch a sync covers begins right after it)."""

    rng: random.Random
    fail_at: int
    group: GroupCommit | None = None
    starts: list[int] = field(default_factory=list)
    _pause: threading.Event = field(default_factory=threading.Event)

    def sync(self, fd: int) -> None:
        if self.group is None:
            return  # the sync at open, before any commit
        self.starts.append(self.group.synced)
        if self.rng.random() < 0.6:
            self._pause.wait(self.rng.choice((0.0002, 0.001, 0.004)))
        if len(self.starts) == self.fail_at:
            raise OSError(errno.EIO, "Input/output error")


@dataclass
class Outcomes:
    written: dict[str, int] = field(default_factory=dict)  # instance -> its commit
    errors: dict[int, str] = field(default_factory=dict)  # commit -> the error its caller was told
    answered_early: list[int] = field(default_factory=list)
    reader_errors: list[BaseException] = field(default_factory=list)


async def _yield(rng: random.Random) -> None:
    for _ in range(rng.randrange(3)):
        await asyncio.sleep(0)


async def _writer(n: int, backend: SqliteBackend, group: GroupCommit, rng: random.Random, out: Outcomes) -> None:
    for i in range(WRITES_EACH):
        await backend.room()
        needs = track_call()
        iid = f"w{n}-{i}"
        # Now and then a large write (the size of an off-loop turn) among the small ones.
        payload = "x" * (256 * 1024) if rng.random() < 0.05 else "y" * rng.randrange(1, 2000)
        with backend.transaction() as tx:
            tx.put_instance(InstanceRecord("h", iid, "e", "n", 0, 1, 1, input=payload))
        out.written[iid] = needs.made
        await _yield(rng)
        try:
            await backend.durable(needs.made, needs.seen)
        except StorageError as error:
            out.errors[needs.made] = str(error)
        else:
            if group.synced < needs.made:
                out.answered_early.append(needs.made)


async def _reader(backend: SqliteBackend, rng: random.Random, out: Outcomes, done: asyncio.Event) -> None:
    while not done.is_set():
        needs = track_call()
        if out.written and rng.random() < 0.5:
            backend.read_instance("h", rng.choice(list(out.written)))
        else:
            with backend.transaction() as tx:  # a read inside a transaction sees every commit made so far
                tx.get_instance("h", f"w0-{rng.randrange(WRITES_EACH)}")
        try:
            await backend.durable(needs.made, needs.seen)
        except StorageError as error:
            out.reader_errors.append(error)
        await _yield(rng)
        await asyncio.sleep(0.0005 * rng.random())


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_each_caller_learns_its_own_commits_outcome_and_readers_never_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    disk = ErraticDisk(random.Random(seed * 7919), fail_at=rng.randint(3, 30))
    monkeypatch.setattr(gc, "sync_file", disk.sync)
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    group = backend.group_commit
    assert group is not None
    disk.group = group
    out = Outcomes()

    async def scenario() -> None:
        done = asyncio.Event()
        readers = [
            asyncio.ensure_future(_reader(backend, random.Random(rng.random()), out, done)) for _ in range(READERS)
        ]
        await asyncio.gather(*(_writer(n, backend, group, random.Random(rng.random()), out) for n in range(WRITERS)))
        done.set()
        await asyncio.gather(*readers)

    try:
        asyncio.run(scenario())
    finally:
        backend.close()
    made = sorted(out.written.values())
    assert made == list(range(1, WRITERS * WRITES_EACH + 1))
    assert len(disk.starts) == disk.fail_at  # no sync after the failed one
    synced_before_failure = disk.starts[-1]
    assert sorted(out.errors) == [m for m in made if m > synced_before_failure]
    assert out.answered_early == []  # no success before the commit was on disk
    assert out.reader_errors == []
    # The failed batch, then every later commit: one message each, in that order, naming the same error ID.
    kinds = [("batch" if "could not save the change" in out.errors[m] else "after") for m in sorted(out.errors)]
    assert kinds[0] == "batch" and kinds == sorted(kinds, key=("batch", "after").index)
    assert len(set(out.errors.values())) <= 2
    assert len({re.search(r"error ([0-9a-f]{12})", e).group(1) for e in out.errors.values()}) == 1  # type: ignore[union-attr]
