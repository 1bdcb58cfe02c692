"""Group commit (``--durability full``): commits synced together, nothing answered before its sync, a failed sync
reported to the callers whose commits it held and to no other, bounded batches, fairness behind a large turn.

Most tests run twice: with the syncs on the group commit's thread, and with the syncs the kernel runs for the event
loop (``kernel``), there played by :class:`FakeKernel`, whose syncs are the test's :class:`Disk`."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dtscale_emulator.errors import StorageError
from dtscale_emulator.storage import InstanceRecord, SqliteBackend, kernel_sync
from dtscale_emulator.storage import group_commit as gc
from dtscale_emulator.storage.group_commit import GroupCommit, track_call


class Disk:
    """A sync the test controls: it can be held (a stalled disk) or fail; it counts what it was asked."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Semaphore(0)
        self.fail_calls: set[int] = set()
        self.calls = 0

    def sync(self, fd: int) -> None:
        self.calls += 1
        call = self.calls
        self.entered.release()
        assert self.open.wait(60), "the test never let the held sync finish"
        if call in self.fail_calls:
            raise OSError(errno.EIO, "Input/output error")

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    def wait_entered(self) -> None:
        assert self.entered.acquire(timeout=60), "no sync began"


class FakeKernel:
    """Kernel syncs as :mod:`kernel_sync` gives them, each one the test's ``disk.sync`` run on a thread of its own."""

    def __init__(self, disk: Disk, fd: int) -> None:
        self._disk, self._fd = disk, fd
        self._efd = os.eventfd(0, os.EFD_NONBLOCK)
        self._ended = threading.Condition()
        self._outcomes: list[int] = []
        self.submitted = 0
        disk.sync(fd)  # the probe sync the kernel's syncs open with (where the thread's open with the log's own)

    def fileno(self) -> int:
        return self._efd

    def submit(self) -> None:
        self.submitted += 1
        threading.Thread(target=self._sync, daemon=True).start()

    def _sync(self) -> None:
        try:
            self._disk.sync(self._fd)
            outcome = 0
        except OSError as error:
            outcome = -(error.errno or errno.EIO)
        with self._ended:
            self._outcomes.append(outcome)
            self._ended.notify_all()
        os.eventfd_write(self._efd, 1)

    def reap(self) -> list[int]:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self._efd)
        with self._ended:
            found, self._outcomes = self._outcomes, []
        return found

    def wait(self, seconds: float | None = None) -> int | None:
        with self._ended:
            if not self._ended.wait_for(lambda: self._outcomes, seconds):
                return None
            return self._outcomes.pop(0)

    def close(self) -> None:
        os.close(self._efd)


@pytest.fixture
def kernels() -> list[FakeKernel]:
    """The fake kernels made by the test (on the ``kernel`` path)."""
    return []


@pytest.fixture(params=["thread"])
def disk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kernels: list[FakeKernel]) -> Disk:
    """The test's disk; with ``kernel`` (indirect parametrization) its syncs are the kernel's, for the loop."""
    d = Disk()
    if request.param == "kernel":

        def open_fake(fd: int) -> FakeKernel:
            kernels.append(FakeKernel(d, fd))
            return kernels[-1]

        monkeypatch.setattr(kernel_sync, "open_kernel_sync", open_fake)
    else:
        monkeypatch.setattr(gc, "sync_file", d.sync)
    return d


#: For the tests whose rules hold on both paths.
BOTH_PATHS = pytest.mark.parametrize("disk", ["thread", "kernel"], indirect=True)


@pytest.fixture
def backend(tmp_path: Path, disk: Disk) -> Iterator[SqliteBackend]:
    b = SqliteBackend(str(tmp_path / "emu.db"))
    disk.wait_entered()  # the sync of the log's first size, at open
    yield b
    disk.release()
    b.close()


def _group(backend: SqliteBackend) -> GroupCommit:
    group = backend.group_commit
    assert group is not None
    return group


def _put(backend: SqliteBackend, iid: str, payload: str = "") -> tuple[int, int]:
    """Commits one instance; returns the (made, seen) commits a call that did it would wait for."""
    needs = track_call()
    with backend.transaction() as tx:
        tx.put_instance(InstanceRecord("h", iid, "e", "n", 0, 1, 1, input=payload or None))
    return needs.made, needs.seen


def _read(backend: SqliteBackend, iid: str) -> tuple[int, int]:
    needs = track_call()
    with backend.transaction() as tx:
        tx.get_instance("h", iid)
    return needs.made, needs.seen


def _until(condition: Callable[[], bool]) -> None:
    """Waits (bounded) for another thread to reach a state; never asserts on how long it took."""
    event = threading.Event()
    for _ in range(6000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never held")


@BOTH_PATHS
def test_commits_made_during_a_sync_share_the_next_one_and_none_is_answered_before_its_sync(
    backend: SqliteBackend, disk: Disk
) -> None:
    group = _group(backend)

    async def scenario() -> None:
        disk.hold()
        first = asyncio.ensure_future(backend.durable(*_put(backend, "first")))
        await asyncio.to_thread(disk.wait_entered)  # the first commit's sync is running, held
        later = [asyncio.ensure_future(backend.durable(*_put(backend, f"later-{i}"))) for i in range(20)]
        await asyncio.sleep(0)
        assert not first.done() and not any(f.done() for f in later)
        syncs = group.syncs
        disk.release()
        await first
        await asyncio.gather(*later)
        # The twenty commits made while the first sync ran were synced together, by one more sync.
        assert group.syncs == syncs + 2
        assert group.synced == group.committed

    asyncio.run(scenario())


@BOTH_PATHS
def test_commits_made_on_the_loop_before_it_runs_on_share_one_sync_and_a_commit_off_the_loop_syncs_alone(
    backend: SqliteBackend, disk: Disk
) -> None:
    """The syncing thread starts once the loop has run what was ready (and what that made ready): commits made in
    one pass, and in the pass they wake, share a sync. A commit made off any loop is released at once."""
    group = _group(backend)

    async def scenario() -> None:
        syncs = group.syncs
        made = [_put(backend, f"same-pass-{i}") for i in range(3)]
        woken = asyncio.get_running_loop().create_future()
        woken.add_done_callback(lambda _: made.append(_put(backend, "woken")))  # runs in the next pass
        woken.set_result(None)
        await asyncio.gather(*(backend.durable(*needs) for needs in made[:3]))
        await backend.durable(*made[3])
        assert group.syncs == syncs + 1
        assert group.synced == group.committed

    asyncio.run(scenario())
    syncs = group.syncs
    committed = _put(backend, "off-the-loop")[0]
    _until(lambda: group.synced >= committed)
    assert group.syncs == syncs + 1


@BOTH_PATHS
def test_a_commit_on_a_loop_that_stops_before_its_sync_is_released_is_still_synced_and_later_ones_too(
    backend: SqliteBackend, disk: Disk
) -> None:
    """A loop stopped within the two passes its release waits for (``run_until_complete`` returning right after
    the commit) never runs the release: the commit, and every later one, must still reach the disk."""
    group = _group(backend)
    loop = asyncio.new_event_loop()

    async def commit() -> int:
        return _put(backend, "on-a-loop-that-stops")[0]

    try:
        stranded = loop.run_until_complete(commit())
    finally:
        loop.close()

    async def read_it() -> None:
        await backend.durable(0, stranded)  # a caller on another loop that read it

    asyncio.run(read_it())
    later = _put(backend, "off-the-loop")[0]
    _until(lambda: group.synced >= later)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(commit())
    finally:
        loop.close()

    async def on_a_new_loop() -> None:
        await backend.durable(*_put(backend, "on-a-new-loop"))

    asyncio.run(on_a_new_loop())
    assert group.synced == group.committed


@BOTH_PATHS
def test_a_read_waits_for_the_commits_it_may_have_seen_and_a_call_that_touched_nothing_waits_for_none(
    backend: SqliteBackend, disk: Disk
) -> None:
    async def scenario() -> None:
        disk.hold()
        made = _put(backend, "a")
        await asyncio.to_thread(disk.wait_entered)
        read = _read(backend, "a")
        assert read == (0, made[0])
        reader = asyncio.ensure_future(backend.durable(*read))
        await asyncio.sleep(0)
        assert not reader.done()  # what it read is not on disk yet
        idle = track_call()
        await backend.durable(idle.made, idle.seen)  # nothing read or written: answered at once
        disk.release()
        await reader

    asyncio.run(scenario())


@BOTH_PATHS
def test_a_failed_sync_fails_exactly_the_commits_it_held(backend: SqliteBackend, disk: Disk) -> None:
    async def scenario() -> None:
        disk.hold()
        before = _put(backend, "before")
        await asyncio.to_thread(disk.wait_entered)  # its sync runs, held; the next three share the next one
        failing = [_put(backend, f"in-failing-batch-{i}") for i in range(3)]
        reader = _read(backend, "in-failing-batch-0")
        disk.fail_calls.add(disk.calls + 1)
        disk.release()
        await backend.durable(*before)  # its own sync succeeded
        outcomes = await asyncio.gather(*(backend.durable(*f) for f in failing), return_exceptions=True)
        assert all(isinstance(o, StorageError) and "could not save the change to disk" in str(o) for o in outcomes)
        assert len({str(o) for o in outcomes}) == 1  # one failure, one error ID, told to each of its callers
        await backend.durable(*reader)  # a reader of that batch is not told of a failure that is not its own
        await backend.durable(*before)  # nor, asked again, a caller an earlier sync held
        # A commit after the failed batch follows lost frames in the log: never acknowledged, the log not synced.
        syncs = disk.calls
        with pytest.raises(StorageError, match=r"since an earlier write to disk failed .*restart it"):
            await backend.durable(*_put(backend, "after"))
        assert disk.calls == syncs
        await backend.durable(*_read(backend, "after"))  # reads are still answered

    asyncio.run(scenario())
    assert backend._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # the log is kept as it is


@BOTH_PATHS
def test_a_commit_made_during_a_failed_sync_is_never_acknowledged(backend: SqliteBackend, disk: Disk) -> None:
    async def scenario() -> None:
        disk.hold()
        failing = _put(backend, "failing")
        await asyncio.to_thread(disk.wait_entered)
        disk.fail_calls.add(disk.calls)
        later = _put(backend, "later")  # made while the failing sync runs: its own batch is the next one
        disk.release()
        with pytest.raises(StorageError, match="could not save the change to disk"):
            await backend.durable(*failing)
        with pytest.raises(StorageError, match="since an earlier write to disk failed"):
            await backend.durable(*later)

    asyncio.run(scenario())


@BOTH_PATHS
def test_a_small_commit_behind_a_large_one_waits_at_most_one_extra_sync(backend: SqliteBackend, disk: Disk) -> None:
    group = _group(backend)

    async def scenario() -> None:
        disk.hold()
        large = _put(backend, "large", "x" * (256 * 1024))
        await asyncio.to_thread(disk.wait_entered)
        syncs_at_commit = group.syncs
        small = _put(backend, "small")
        disk.release()
        await backend.durable(*small)
        await backend.durable(*large)
        assert group.syncs - syncs_at_commit <= 2  # the large commit's sync, then the one holding the small

    asyncio.run(scenario())


@BOTH_PATHS
def test_unsynced_bytes_are_bounded_callers_wait_for_room(
    backend: SqliteBackend, disk: Disk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "MAX_PENDING_BYTES", 64 * 1024)

    async def scenario() -> None:
        disk.hold()
        _put(backend, "first")
        await asyncio.to_thread(disk.wait_entered)
        await backend.room()  # under the bound: no wait
        _put(backend, "big", "y" * (128 * 1024))
        room = asyncio.ensure_future(backend.room())
        await asyncio.sleep(0)
        assert not room.done()  # past the bound: the next writer waits for a sync
        disk.release()
        await room

    asyncio.run(scenario())


@BOTH_PATHS
def test_close_syncs_what_is_left(tmp_path: Path, disk: Disk) -> None:
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    group = _group(backend)
    _put(backend, "last")
    backend.close()
    assert group.synced == group.committed


def test_normal_durability_and_memory_have_nothing_to_wait_for(tmp_path: Path) -> None:
    for backend in (SqliteBackend(str(tmp_path / "n.db"), "normal"), SqliteBackend(None)):
        assert backend.group_commit is None
        made, seen = _put(backend, "x")
        assert backend.last_commit == 0 and (made, seen) == (0, 0)
        asyncio.run(backend.durable(made, seen))
        backend.close()


def test_a_disk_too_full_for_the_logs_full_size_still_opens_and_syncs(
    tmp_path: Path, disk: Disk, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gc.os, "write", no_room)
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    monkeypatch.undo()
    group = _group(backend)
    made, seen = _put(backend, "x")
    asyncio.run(backend.durable(made, seen))
    assert group.synced == group.committed == made
    backend.close()


async def _answer_three_together(backend: SqliteBackend, disk: Disk) -> None:
    """Leaves the group having answered three callers with one sync (so it expects three back)."""
    disk.hold()
    first = _put(backend, "first")
    await asyncio.to_thread(disk.wait_entered)  # the first sync runs, held; three commits come meanwhile
    trio = [_put(backend, f"trio-{i}") for i in range(3)]
    waits = [asyncio.ensure_future(backend.durable(*c)) for c in (first, *trio)]
    await asyncio.sleep(0)  # all four wait
    disk.release()
    await asyncio.gather(*waits)


def test_a_sync_waits_for_as_many_commits_as_the_last_one_answered_callers(
    backend: SqliteBackend, disk: Disk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "GATHER_SECONDS", 3600.0)  # the bound in time never ends the wait here
    group = _group(backend)

    async def scenario() -> None:
        await _answer_three_together(backend, disk)
        syncs = group.syncs
        made = []
        for i in range(3):  # three callers come back one after another, the loop free in between
            made.append(_put(backend, f"back-{i}"))
            await asyncio.sleep(0.02)
        await asyncio.gather(*(backend.durable(*m) for m in made))
        assert group.syncs == syncs + 1  # one sync for the three, not one for the first as it came

    asyncio.run(scenario())


def test_a_sync_waits_for_expected_commits_no_longer_than_its_bound_and_never_for_a_lone_caller(
    backend: SqliteBackend, disk: Disk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "GATHER_SECONDS", 0.01)
    group = _group(backend)

    async def scenario() -> None:
        await _answer_three_together(backend, disk)
        syncs = group.syncs
        await backend.durable(*_put(backend, "only-one-came-back"))  # three expected: the bound ends the wait
        assert group.syncs == syncs + 1
        monkeypatch.setattr(gc, "GATHER_SECONDS", 3600.0)  # past the test's timeout: only the rule ends a wait
        await backend.durable(*_put(backend, "alone"))  # the last sync answered one caller: no wait at all

    asyncio.run(scenario())


def test_a_sync_waits_for_expected_commits_only_until_they_hold_its_bound_in_bytes(
    backend: SqliteBackend, disk: Disk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "GATHER_SECONDS", 3600.0)  # past the test's timeout: only the rule ends a wait
    monkeypatch.setattr(gc, "GATHER_BYTES", 64 * 1024)
    group = _group(backend)

    async def scenario() -> None:
        await _answer_three_together(backend, disk)
        syncs = group.syncs
        await backend.durable(*_put(backend, "large", "z" * (128 * 1024)))  # three expected; the bytes end the wait
        assert group.syncs == syncs + 1

    asyncio.run(scenario())


@pytest.mark.parametrize("disk", ["kernel"], indirect=True)
def test_on_a_running_loop_the_kernel_syncs_commits_made_off_the_loop_too(
    backend: SqliteBackend, disk: Disk, kernels: list[FakeKernel]
) -> None:
    """A commit made on another thread (a large turn's, in the executor) is synced by the loop's kernel syncs."""
    group = _group(backend)

    async def scenario() -> None:
        await backend.durable(*_put(backend, "on-the-loop"))
        assert group.kernel_syncs
        submitted = kernels[0].submitted
        made = await asyncio.to_thread(_put, backend, "off-the-loop")
        await backend.durable(*made)
        assert kernels[0].submitted == submitted + 1

    asyncio.run(scenario())
    assert not group.kernel_syncs  # its loop is gone: the thread syncs from now on


@pytest.mark.parametrize("disk", ["kernel"], indirect=True)
def test_a_kernel_sync_whose_loop_stops_is_taken_by_the_thread_and_its_callers_on_other_loops_answered(
    backend: SqliteBackend, disk: Disk
) -> None:
    group = _group(backend)
    loop = asyncio.new_event_loop()

    async def commit_and_stop() -> tuple[int, int]:
        disk.hold()
        made = _put(backend, "stranded")
        await asyncio.to_thread(disk.wait_entered)  # its kernel sync runs, held; the loop then stops
        return made

    try:
        made = loop.run_until_complete(commit_and_stop())
    finally:
        loop.close()
    disk.release()

    async def on_another_loop() -> None:
        await backend.durable(*made)
        await backend.durable(*_put(backend, "later"))

    asyncio.run(on_another_loop())
    assert group.synced == group.committed


@pytest.mark.parametrize("disk", ["kernel"], indirect=True)
def test_closing_on_the_loop_with_a_kernel_sync_out_waits_for_it_there(tmp_path: Path, disk: Disk) -> None:
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    group = _group(backend)

    async def scenario() -> None:
        await backend.durable(*_put(backend, "bound"))
        disk.hold()
        _put(backend, "last")
        await asyncio.to_thread(disk.wait_entered)
        threading.Timer(0.05, disk.release).start()
        backend.close()  # on the loop, which therefore cannot take the sync's end itself

    asyncio.run(scenario())
    assert group.synced == group.committed


def test_the_kernels_syncs_of_a_real_file_end_through_the_eventfd(tmp_path: Path) -> None:
    import select

    with open(tmp_path / "log", "wb+") as f:
        f.write(b"x" * 8192)
        found = kernel_sync.open_kernel_sync(f.fileno())
        if found is None:
            pytest.skip("this kernel runs no AIO syncs (the emulator syncs on its thread here)")
        try:
            for _ in range(3):
                f.write(b"y" * 4096)
                f.flush()
                found.submit()
                readable, _, _ = select.select([found.fileno()], [], [], 60)
                assert readable
                assert found.reap() == [0]
                assert found.reap() == []  # each end is told once
            found.submit()
            assert found.wait(60) == 0
        finally:
            found.close()


def test_the_default_store_syncs_in_the_kernel_for_its_loop_where_the_kernel_can(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    with open(probe, "wb") as f:
        works = kernel_sync.open_kernel_sync(f.fileno())
    if works is None:
        pytest.skip("this kernel runs no AIO syncs (the emulator syncs on its thread here)")
    works.close()
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    group = _group(backend)

    async def scenario() -> None:
        syncs = group.syncs
        for i in range(5):
            await backend.durable(*_put(backend, f"i{i}"))
        assert group.kernel_syncs and group.syncs == syncs + 5

    try:
        asyncio.run(scenario())
    finally:
        backend.close()
    assert group.synced == group.committed
