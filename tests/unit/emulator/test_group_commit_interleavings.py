"""Group commit under injected interleavings: concurrent writers and readers, a disk whose syncs are held for random
spans and fail at random. Each writer's outcome must be its own batch's: a failure exactly when the sync that held its
commit failed, success only once that commit is synced; a reader is never told of a failure."""

from __future__ import annotations

import asyncio
import errno
import random
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
    """Syncs held for a random span (some not at all), a random share of them failing; records each sync's start.

    ``batches`` pairs each sync with the number of the newest commit synced before it began: the batch a sync covers
    runs from that number + 1 to the number the next sync records (or the group's ``synced`` once all are done).
    """

    rng: random.Random
    fail_share: float
    group: GroupCommit | None = None
    batches: list[tuple[int, bool]] = field(default_factory=list)
    _pause: threading.Event = field(default_factory=threading.Event)

    def sync(self, fd: int) -> None:
        if self.group is None:
            return  # the sync at open, before any commit
        fails = self.rng.random() < self.fail_share
        self.batches.append((self.group.synced, fails))
        if self.rng.random() < 0.6:
            self._pause.wait(self.rng.choice((0.0002, 0.001, 0.004)))
        if fails:
            raise OSError(errno.EIO, "Input/output error")

    def failed_commits(self) -> set[int]:
        assert self.group is not None
        ends = [start for start, _ in self.batches[1:]] + [self.group.synced]
        failed: set[int] = set()
        for (start, fails), end in zip(self.batches, ends, strict=True):
            if fails:
                failed.update(range(start + 1, end + 1))
        return failed


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
def test_each_caller_learns_its_own_batchs_outcome_and_readers_never_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    disk = ErraticDisk(random.Random(seed * 7919), fail_share=0.3)
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
    failed = disk.failed_commits()
    made = set(out.written.values())
    assert len(made) == WRITERS * WRITES_EACH
    assert set(out.errors) == failed & made  # told exactly when its own batch's sync failed
    assert out.answered_early == []  # no success before the commit was on disk
    assert out.reader_errors == []
    # One failed sync, one error (and ID) for all its callers; another failed sync, another error.
    batch_of = {}
    ends = [start for start, _ in disk.batches[1:]] + [group.synced]
    for index, ((start, _), end) in enumerate(zip(disk.batches, ends, strict=True)):
        batch_of.update(dict.fromkeys(range(start + 1, end + 1), index))
    by_batch: dict[int, set[str]] = {}
    for commit, message in out.errors.items():
        by_batch.setdefault(batch_of[commit], set()).add(message)
    assert all(len(messages) == 1 for messages in by_batch.values())
    assert len({m for messages in by_batch.values() for m in messages}) == len(by_batch)
    # The scenario exercised both outcomes, and batches of more than one commit.
    assert out.errors and len(out.errors) < len(made)
    assert group.syncs < len(made)
