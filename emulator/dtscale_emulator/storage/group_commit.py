"""Group commit: the write-ahead log synced once for all the commits made meanwhile.

With ``--durability full`` the store's connection commits without syncing (SQLite's ``synchronous=NORMAL``: the
log's pages reach the OS at COMMIT, the disk only at checkpoints), and the log file is synced after the commits:
by the kernel for the event loop where Linux can (:mod:`kernel_sync`), else by a thread of its own. A call is
answered only once every commit its answer rests on is synced: its own, and those it read. So the guarantee is
SQLite's ``FULL``, and the price changes shape: while one sync runs, the commits made on the event loop meanwhile
wait for the next one, together, instead of each stopping the loop for a sync of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from dtscale_emulator.errors import StorageError
from dtscale_emulator.storage import kernel_sync
from dtscale_emulator.storage.sqlite_checks import sync_folder

log = logging.getLogger("dtscale_emulator")

#: Commits not yet synced may hold about this many bytes; past it, calls wait for a sync before they run, so a
#: disk that stalls holds back the writes, not the memory (or the loop, or a health ping).
MAX_PENDING_BYTES = 8 * 1024 * 1024
#: How long a sync may wait for the commits of callers expected back (see GroupCommit._gather), and for how many
#: bytes of commits at most: the bounds, in time and size, of a batch beyond the commits made during one sync.
GATHER_SECONDS = 0.002
GATHER_BYTES = 1024 * 1024
#: The size the log is given when the store opens: the frames a checkpoint lets it reach (``wal_autocheckpoint``,
#: 4,000 pages of 4 KiB, each with its 24-byte frame header), and its 32-byte header.
LOG_BYTES = 32 + 4000 * (4096 + 24)


def sync_file(fd: int) -> None:
    """Puts what was written to ``fd`` on stable storage (on macOS past the drive's own cache)."""
    if sys.platform == "darwin":
        import fcntl

        fcntl.fcntl(fd, fcntl.F_FULLFSYNC)  # type: ignore[attr-defined,unused-ignore]
    elif hasattr(os, "fdatasync"):
        os.fdatasync(fd)  # the log's data and its size, not its times
    else:
        os.fsync(fd)


#: The real sync, as imported: a store given another (a test's, or a patched ``sync_file``) syncs on the thread.
_SYNC_FILE = sync_file


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Needs:
    """The commits one call's answer rests on: the newest it made, and the newest it may have read."""

    __slots__ = ("made", "seen")

    def __init__(self) -> None:
        self.made = 0
        self.seen = 0


_NEEDS: ContextVar[Needs | None] = ContextVar("dtscale_emulator_durable_needs", default=None)


def track_call() -> Needs:
    """Starts recording, for the calling task (and the threads it hands work to with its context), its commits."""
    needs = Needs()
    _NEEDS.set(needs)
    return needs


def _note(made: int, seen: int) -> None:
    needs = _NEEDS.get()
    if needs is not None:
        needs.made = max(needs.made, made)
        needs.seen = max(needs.seen, seen)


#: A waiting call's future, and what it is told: None (its commit is on disk) or its sync's failure.
_Outcome = tuple[asyncio.Future[StorageError | None], StorageError | None]


def _settle(outcomes: list[_Outcome]) -> None:
    for future, failure in outcomes:
        if not future.done():
            future.set_result(failure)


_Waiter = tuple[int, int, asyncio.AbstractEventLoop, asyncio.Future[StorageError | None]]
_ByLoop = dict[asyncio.AbstractEventLoop, list[_Outcome]]


def _answer(by_loop: _ByLoop) -> None:
    """Tells each loop's waiters their outcomes: at once on the running loop, through its queue on others."""
    current = _running_loop()
    for loop, outcomes in by_loop.items():
        if loop is current:
            _settle(outcomes)
        else:
            with contextlib.suppress(RuntimeError):  # a loop already closed has no one left to answer
                loop.call_soon_threadsafe(_settle, outcomes)


class GroupCommit:
    """Numbers the commits of one store and syncs its write-ahead log for all those made since the last sync.

    ``sync`` puts a file descriptor's writes on disk (:func:`sync_file`; tests pass one that fails or stalls).
    With the default, and where the kernel can (:mod:`kernel_sync`), the syncs of commits made on an event loop
    are run by the kernel for that loop: no thread hand-off, and the loop never blocks. ``kernel`` opens those
    syncs for a file descriptor (``None`` where they are unavailable); tests pass one that fails or stalls.
    Otherwise, and whenever that loop is not running, the syncing thread makes them.
    """

    def __init__(
        self,
        db_path: str,
        sync: Callable[[int], None] | None = None,
        kernel: Callable[[int], kernel_sync.KernelSync | None] | None = None,
    ) -> None:
        self._wal = db_path + "-wal"
        self._sync = sync or sync_file
        if kernel is None and self._sync is _SYNC_FILE:
            kernel = kernel_sync.open_kernel_sync
        self._cond = threading.Condition()
        self._committed = 0
        self._synced = 0
        # The newest unsynced commit to each instance row it names, and the newest that changed rows it cannot name.
        self._dirty: dict[tuple[str, str], int] = {}
        self._wide = 0
        self._bytes = 0
        self._closing = False
        self._fd: int | None = None
        # Each waiter: the commit it waits for, its own commit (0: none), its loop and its future.
        self._waiters: list[_Waiter] = []
        # The first failed sync: its commits, and the errors told to them and to every commit made after them.
        self._failed_batch: tuple[int, int, StorageError, StorageError] | None = None
        #: Syncs made so far (each covers every commit made before it began).
        self.syncs = 0
        # The callers the last sync answered for commits of their own, and how many unsynced commits wake the thread.
        self._callers_last = 0
        self._wake_at = 1
        # The newest commit the thread may start a sync for, and the event loop a release is queued on (if any).
        self._released = 0
        self._release_on: asyncio.AbstractEventLoop | None = None
        # A sync is running (on the thread or in the kernel); the kernel's: its commits (first, last) and bytes.
        self._syncing = False
        self._out: tuple[int, int, int] | None = None
        # The kernel's syncs, and the loop they report to (the first that released commits while it ran).
        self._kernel: kernel_sync.KernelSync | None = None
        self._kernel_loop: asyncio.AbstractEventLoop | None = None
        self._kick_queued = False
        self._open_log()
        if kernel is not None:
            assert self._fd is not None
            self._kernel = kernel(self._fd)
        self._thread = threading.Thread(target=self._run, name="emulator-group-commit", daemon=True)
        self._thread.start()

    def _open_log(self) -> None:
        """Opens the log for syncing and gives it its full size at once, before any commit runs.

        A sync of writes that grow a file also commits the file system's journal (the new size and blocks): on
        ext4 here, 0.3-0.4 ms against 0.12 ms for the same write into blocks already there. SQLite writes the log
        from its start again after each checkpoint, so once the file has the size a checkpoint lets it reach,
        the syncs are of data only. Zeros past the log's frames read as the end of the log, as the remains of an
        older log do after a checkpoint.
        """
        fd = os.open(self._wal, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size < LOG_BYTES:
                os.lseek(fd, size, os.SEEK_SET)
                chunk = bytes(1024 * 1024)
                try:
                    while size < LOG_BYTES:
                        size += os.write(fd, chunk[: LOG_BYTES - size])
                except OSError as error:  # a full disk: the log grows as it is written instead, its syncs dearer
                    log.warning("could not give the write-ahead log its full size (%s); commits still sync", error)
            self._sync(fd)
            sync_folder(self._wal)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    @property
    def committed(self) -> int:
        """The number of the newest commit."""
        return self._committed

    @property
    def kernel_syncs(self) -> bool:
        """Whether the kernel runs the syncs now, for a running event loop (else the syncing thread does)."""
        with self._cond:
            return self._kernel is not None and self._syncing_loop() is not None

    @property
    def synced(self) -> int:
        """Every commit up to this number is on disk (or its sync failed and its callers were told)."""
        return self._synced

    def committed_one(self, size: int, wrote: bool, instances: set[tuple[str, str]] | None = None) -> None:
        """Called right after a COMMIT (under the store's lock): numbers it if it wrote, and notes what it needs.

        ``instances`` are the instance rows it changed (``None``: it cannot name them), for :meth:`instance_read`.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        queue = False
        with self._cond:
            if wrote:
                self._committed += 1
                self._bytes += size
                if instances is None:
                    self._wide = self._committed
                else:
                    for key in instances:
                        self._dirty[key] = self._committed
                if self._bytes >= GATHER_BYTES:
                    self._release_locked()
                elif self._wake_at > 1:  # a sync is gathering the commits of callers expected back
                    if self._committed - self._synced >= self._wake_at:
                        self._cond.notify_all()
                elif not self._release_pending():
                    if loop is None:  # off any loop: nothing to let run first
                        self._release_locked()
                    else:
                        self._release_on, queue = loop, True
            seq = self._committed
        if queue and loop is not None:
            loop.call_soon(loop.call_soon, self._release)  # two passes: the woken streams' leases come in the first
        _note(seq if wrote else 0, seq)

    def _release_pending(self) -> bool:
        """Whether a release is queued on a loop that will run it (called with the lock held).

        A sync starts once the event loop has run what is ready now, and what that made ready (at once off a loop).
        The commits the loop makes meanwhile then share that sync: other calls' turns and completions ready in the
        same pass, and the leases of the streams a commit woke (a turn's completion wakes a stream that leases the
        activity it scheduled in the next pass). Syncing at the first commit took it alone, and each sync costs
        about a quarter of a millisecond of CPU in thread hand-offs and system time: under load, CPU the loop lacks.
        A loop that stops first (``run_until_complete`` returning right after the commit) never runs its release:
        the commits it held then go with the next commit's release, or with the next caller that waits for them.
        """
        return self._release_on is not None and self._release_on.is_running()

    def _release(self) -> None:
        with self._cond:
            self._release_locked()

    def _release_locked(self) -> None:
        self._release_on = None
        self._released = self._committed
        if not self._start_locked():
            self._cond.notify_all()  # the thread syncs them

    # Kernel syncs, run for an event loop -----------------------------------------------------------
    def _syncing_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the kernel's syncs report to, while it runs (called with the lock held)."""
        loop = self._kernel_loop
        if loop is None or loop.is_closed() or not loop.is_running():
            return None
        return loop

    def _start_locked(self) -> bool:
        """Starts a kernel sync of the released commits unless one runs; whether a loop takes them (with the lock).

        ``False``: no loop runs the kernel's syncs, so the thread is to sync them (notifying it is the caller's).
        Waking the thread when a loop takes them would cost the very hand-off the kernel's syncs avoid.
        """
        if self._kernel is None:
            return False
        loop = self._syncing_loop()
        current = _running_loop()
        if loop is None:
            if current is None or self._syncing:
                return False
            loop = self._bind(current)
        if self._syncing or self._synced >= self._released:
            return True  # the sync running now starts the next when it ends
        if loop is current:
            self._submit_locked(loop)
        elif not self._kick_queued:
            self._kick_queued = True
            try:
                loop.call_soon_threadsafe(self._kick)
            except RuntimeError:  # closed meanwhile: the thread takes the sync
                self._kick_queued = False
                return False
        return True

    def _bind(self, loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
        assert self._kernel is not None
        old = self._kernel_loop
        if old is not None and not old.is_closed():
            old.remove_reader(self._kernel.fileno())  # it is not running (else it would still be bound)
        loop.add_reader(self._kernel.fileno(), self._kernel_ready)
        self._kernel_loop = loop
        self._cond.notify_all()  # the thread now looks now and then whether the loop still runs
        return loop

    def _kick(self) -> None:
        with self._cond:
            self._kick_queued = False
            self._start_locked()

    def _submit_locked(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._kernel is not None
        self._syncing = True
        self._out = (self._synced + 1, self._committed, self._bytes)
        if self._failed_batch is not None:  # nothing reaches the disk after a failed sync; its callers are told
            loop.call_soon(self._kernel_done, 0)
            return
        try:
            self._kernel.submit()
        except OSError as error:
            loop.call_soon(self._kernel_done, -(error.errno or errno.EIO))

    def _kernel_ready(self) -> None:
        assert self._kernel is not None
        try:
            outcomes = self._kernel.reap()
        except OSError as error:  # the kernel lost track of the sync: it cannot be known to be on disk
            outcomes = [-(error.errno or errno.EIO)] if self._out is not None else []
        for outcome in outcomes:
            self._kernel_done(outcome)

    def _kernel_done(self, outcome: int) -> None:
        with self._cond:
            out, self._out = self._out, None
            if out is None:
                return
            first, last, taken = out
            problem = None if outcome >= 0 else OSError(-outcome, os.strerror(-outcome))
            by_loop = self._synced_locked(first, last, taken, problem)
            if not self._start_locked():
                self._cond.notify_all()
        _answer(by_loop)

    def instance_read(self, key: tuple[str, str]) -> None:
        """Notes a read of one instance row: it waits only for the unsynced commits that changed that row."""
        with self._cond:
            seq = max(self._wide, self._dirty.get(key, 0))
        if seq > self._synced:
            _note(0, seq)

    # Waiting ---------------------------------------------------------------------------------------
    async def durable(self, made: int, seen: int = 0) -> None:
        """Returns once commit ``made`` and every commit up to ``seen`` are synced.

        Raises :class:`StorageError` when the sync of ``made`` failed; a failed sync of a commit only read (in
        ``seen``) is not this caller's failure, and is not reported to it.
        """
        target = max(made, seen)
        if target > self._synced:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[StorageError | None] = loop.create_future()
            with self._cond:
                waiting = target > self._synced
                if waiting:
                    self._waiters.append((target, made, loop, future))
                    if target > self._released and self._release_on is not None and not self._release_pending():
                        self._release_locked()  # its release was queued on a loop that stopped
            if waiting:
                failure = await future  # the outcome of the sync that held ``made``, told as the waiter's ends
                if failure is not None:
                    raise failure
                return
        if made and self._failed_batch is not None:
            failure = self._failure(made)
            if failure is not None:
                raise failure

    async def room(self) -> None:
        """Waits while the commits not yet synced hold more than :data:`MAX_PENDING_BYTES`."""
        while self._bytes > MAX_PENDING_BYTES and not self._closing:
            await self.durable(0, self._committed)

    def _failure(self, seq: int) -> StorageError | None:
        with self._cond:
            return self._failure_of(seq)

    def _failure_of(self, seq: int) -> StorageError | None:
        """Why commit ``seq`` is not on disk, or ``None`` if it is (called with the lock held)."""
        if self._failed_batch is None:
            return None
        first, last, error, after = self._failed_batch
        if seq < first:
            return None
        return error if seq <= last else after

    @property
    def failed(self) -> bool:
        """A sync of the log failed: no commit made since can be made durable (see :meth:`_failed`)."""
        return self._failed_batch is not None

    # The syncing thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                task = self._thread_task()
                while task is None:
                    # A loop's kernel syncs stop when the loop does, which notifies nobody: look again now and then.
                    self._cond.wait(None if self._kernel_loop is None else 0.1)
                    task = self._thread_task()
                if task == "done":
                    return  # closing, and everything is synced
                if task == "sync":
                    self._syncing = True
                    self._gather()
                    first, target, taken = self._synced + 1, self._committed, self._bytes
            if task == "orphan":
                self._reap_orphan()
                continue
            problem = self._sync_log() if self._failed_batch is None else None
            with self._cond:
                by_loop = self._synced_locked(first, target, taken, problem)
                self._start_locked()  # the thread itself looks for more before it waits
            _answer(by_loop)

    def _thread_task(self) -> str | None:
        """What the thread is to do now: "sync", "orphan" (reap a kernel sync whose loop stopped), "done" or None."""
        loop_syncs = self._syncing_loop() is not None
        if self._out is not None and not loop_syncs:
            return "orphan"
        if self._syncing:
            return None
        if self._closing:
            return "done" if self._synced >= self._committed else "sync"
        return "sync" if self._synced < self._released and not loop_syncs else None

    def _reap_orphan(self) -> None:
        assert self._kernel is not None
        outcome = self._kernel.wait(0.1)
        if outcome is not None:
            self._kernel_done(outcome)

    def _synced_locked(self, first: int, target: int, taken: int, problem: OSError | None) -> _ByLoop:
        """Records a sync's end (called with the lock held); returns the waiters it answers, by loop."""
        if problem is not None:
            self._failed(first, target, problem)
        self._bytes -= taken
        self._synced = target
        if self._dirty:
            self._dirty = {key: seq for key, seq in self._dirty.items() if seq > target}
        self.syncs += 1
        self._syncing = False
        by_loop = self._take_ready(target)
        if self._thread_task() is not None:  # only the thread waits on the condition
            self._cond.notify_all()
        return by_loop

    def _gather(self) -> None:
        """Waits, briefly, for as many commits as the last sync answered callers for (called with the lock held).

        Callers who wait for a sync and call again once answered (several clients or workers, each with one call
        out at a time) come back together; their next commits reach the store one by one, as the event loop
        runs them. Syncing at the first would answer one or two, and cost a sync (its system time, and the thread
        hand-offs around it: about a quarter of a millisecond of CPU here) for each: on two cores, that CPU is
        what the event loop lacks. So the sync waits until as many have committed, for at most
        :data:`GATHER_SECONDS` and :data:`GATHER_BYTES`. A single caller is never held: it was alone last time.
        """
        wanted = self._callers_last
        if wanted <= 1:
            return
        self._wake_at = wanted
        self._cond.wait_for(
            lambda: self._committed - self._synced >= wanted or self._closing or self._bytes >= GATHER_BYTES,
            GATHER_SECONDS,
        )
        self._wake_at = 1

    def _take_ready(self, target: int) -> _ByLoop:
        """Removes the waiters the sync up to ``target`` answers, each with its own commit's outcome, by loop.

        A waiter's own commit may have been held by an earlier sync than the one that ends its wait (it waited for
        a later commit it read), so its outcome is looked up by that commit, never taken from this sync.
        """
        by_loop: _ByLoop = {}
        waiting: list[_Waiter] = []
        callers = 0
        for waiter in self._waiters:
            wanted, made, loop, future = waiter
            if wanted > target:
                waiting.append(waiter)
            else:
                callers += made > 0
                failure = self._failure_of(made) if made else None
                by_loop.setdefault(loop, []).append((future, failure))
        self._waiters = waiting
        self._callers_last = callers
        return by_loop

    def _sync_log(self) -> OSError | None:
        assert self._fd is not None
        try:
            self._sync(self._fd)
        except OSError as error:
            return error
        return None

    def _failed(self, first: int, last: int, problem: OSError) -> None:
        """Fails the batch, and every commit after it: the log is no longer trusted to keep what follows.

        On Linux a failed sync may leave the pages it could not write marked clean, so a later sync that succeeds
        does not write them (PostgreSQL's "fsyncgate"). The log's frames are chained by checksums, and a power
        loss would end its replay at the first frame that did not reach the disk, with every later commit, synced
        or not. So no later commit is acknowledged; the emulator must be restarted (PostgreSQL stops, too). Calls
        that only read go on being answered.
        """
        error_id = uuid.uuid4().hex[:12]
        log.error(
            "error %s: syncing the write-ahead log failed (commits %d to %d): %s; no change made from now on can be "
            "saved to disk: restart the emulator",
            error_id, first, last, problem,
        )  # fmt: skip
        error = StorageError(
            f"the emulator could not save the change to disk (error {error_id}; the server log has the details)"
        )
        after = StorageError(
            f"the emulator cannot save changes to disk since an earlier write to disk failed (error {error_id}); "
            "restart it (the server log has the details)"
        )
        self._failed_batch = (first, last, error, after)

    def close(self) -> None:
        """Syncs what is left, then stops the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            on_its_loop = self._out is not None and _running_loop() is self._kernel_loop
        if on_its_loop:  # the loop cannot take the sync's end while it runs this: take it here
            assert self._kernel is not None
            outcome = self._kernel.wait()  # no time limit, so never None
            self._kernel_done(-errno.EIO if outcome is None else outcome)
        self._thread.join()
        if self._kernel is not None:
            self._unbind()
            self._kernel.close()
            self._kernel = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _unbind(self) -> None:
        """Stops the loop watching the kernel's syncs, on the loop's own thread if it runs."""
        assert self._kernel is not None
        loop, fd = self._kernel_loop, self._kernel.fileno()
        self._kernel_loop = None
        if loop is None or loop.is_closed():
            return
        if not loop.is_running() or _running_loop() is loop:
            loop.remove_reader(fd)
            return
        done = threading.Event()

        def remove() -> None:
            loop.remove_reader(fd)
            done.set()

        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(remove)
            done.wait(5)
