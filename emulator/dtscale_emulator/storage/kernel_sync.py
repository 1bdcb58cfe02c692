"""Syncing the write-ahead log from the event loop, without a thread: Linux's kernel AIO runs the ``fdatasync``.

A sync made on a thread of its own costs two thread hand-offs (the loop wakes the thread, the thread wakes the
loop), and each contends for the interpreter lock with the loop and gRPC's poller thread. Linux (4.18 and later)
can run the sync itself: ``io_submit`` of an ``IOCB_CMD_FDSYNC`` returns at once, a kernel worker runs
``fdatasync`` on the file, and an ``eventfd`` becomes readable when it is done, which the loop watches as it
watches a socket. The loop's thread never blocks on the disk, and no Python thread is involved.

:func:`open_kernel_sync` returns ``None`` wherever this is not available (another OS or architecture, a kernel
without AIO syncs, a sandbox that forbids the calls): the caller then syncs on a thread as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import platform
import sys

log = logging.getLogger("dtscale_emulator")

# The system call numbers of io_setup, io_destroy, io_getevents and io_submit, by architecture.
_CALLS = {
    "x86_64": (206, 207, 208, 209),
    "amd64": (206, 207, 208, 209),
    "aarch64": (0, 1, 4, 2),
    "arm64": (0, 1, 4, 2),
}
_IOCB_CMD_FDSYNC = 3
_IOCB_FLAG_RESFD = 1
#: How long opening waits for its probe sync; a disk slower than this still gets its syncs, from a thread.
_PROBE_SECONDS = 10


class _Iocb(ctypes.Structure):
    # struct iocb of <linux/aio_abi.h> on a little-endian machine (every architecture in _CALLS).
    _fields_ = [
        ("aio_data", ctypes.c_uint64),
        ("aio_key", ctypes.c_uint32),
        ("aio_rw_flags", ctypes.c_int32),
        ("aio_lio_opcode", ctypes.c_uint16),
        ("aio_reqprio", ctypes.c_int16),
        ("aio_fildes", ctypes.c_uint32),
        ("aio_buf", ctypes.c_uint64),
        ("aio_nbytes", ctypes.c_uint64),
        ("aio_offset", ctypes.c_int64),
        ("aio_reserved2", ctypes.c_uint64),
        ("aio_flags", ctypes.c_uint32),
        ("aio_resfd", ctypes.c_uint32),
    ]


class _Event(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64), ("res", ctypes.c_int64), ("res2", ctypes.c_int64)]


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class KernelSync:
    """One file's ``fdatasync``, run by the kernel: :meth:`submit` starts it, :meth:`fileno` is readable when done.

    At most one sync is out at a time (the caller's to ensure). Raises :class:`OSError` if the kernel refuses.
    """

    def __init__(self, fd: int) -> None:
        calls = _CALLS.get(platform.machine().lower())
        if not sys.platform.startswith("linux") or calls is None or not hasattr(os, "eventfd"):
            raise OSError(errno.ENOSYS, f"no kernel AIO syncs on {sys.platform} {platform.machine()}")
        self._setup, self._destroy, self._getevents, self._submit = calls
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.syscall.restype = ctypes.c_long
        ctx = ctypes.c_ulong(0)
        self._call(self._setup, ctypes.c_long(4), ctypes.byref(ctx))
        self._ctx = ctx
        try:
            self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)  # type: ignore[attr-defined,unused-ignore]
        except BaseException:
            self._call(self._destroy, self._ctx)
            raise
        self._iocb = _Iocb(aio_lio_opcode=_IOCB_CMD_FDSYNC, aio_fildes=fd, aio_flags=_IOCB_FLAG_RESFD,
                           aio_resfd=self._efd)  # fmt: skip
        self._iocbs = (ctypes.POINTER(_Iocb) * 1)(ctypes.pointer(self._iocb))
        self._events = (_Event * 4)()
        try:
            self._probe()
        except BaseException:
            self.close()
            raise

    def _call(self, number: int, *args: object) -> int:
        result = int(self._libc.syscall(ctypes.c_long(number), *args))
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return result

    def _probe(self) -> None:
        """One sync, waited for: kernels before 4.18 refuse AIO syncs (EINVAL) only when one runs."""
        self.submit()
        outcome = self._wait(_PROBE_SECONDS)
        if outcome is None:
            raise OSError(errno.ETIMEDOUT, "the probe sync did not end in time")
        if outcome < 0:
            raise OSError(-outcome, os.strerror(-outcome))
        self._drain()

    def fileno(self) -> int:
        """Readable once a sync submitted has ended (then call :meth:`reap`)."""
        return self._efd

    def submit(self) -> None:
        """Starts a sync of everything written to the file so far; returns at once."""
        self._call(self._submit, self._ctx, ctypes.c_long(1), self._iocbs)

    def reap(self) -> list[int]:
        """The outcomes of the syncs that ended (0, or minus an errno), without waiting."""
        self._drain()
        zero = _Timespec(0, 0)
        found = self._call(self._getevents, self._ctx, ctypes.c_long(0), ctypes.c_long(4), self._events,
                           ctypes.byref(zero))  # fmt: skip
        return [int(self._events[i].res) for i in range(found)]

    def wait(self, seconds: float | None = None) -> int | None:
        """Waits (the interpreter lock released) for the sync out to end: its outcome, or ``None`` on time-out."""
        outcome = self._wait(seconds)
        self._drain()
        return outcome

    def _wait(self, seconds: float | None) -> int | None:
        limit = None if seconds is None else ctypes.byref(_Timespec(int(seconds), int(seconds % 1 * 1e9)))
        while True:
            try:
                found = self._call(self._getevents, self._ctx, ctypes.c_long(1), ctypes.c_long(1), self._events, limit)
            except InterruptedError:
                continue
            return int(self._events[0].res) if found else None

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):  # nothing ended since the last look
            os.eventfd_read(self._efd)  # type: ignore[attr-defined,unused-ignore]

    def close(self) -> None:
        """Waits for a sync still out, then frees the kernel's context and the eventfd."""
        if self._efd < 0:
            return
        try:
            self._call(self._destroy, self._ctx)
        finally:
            os.close(self._efd)
            self._efd = -1


def open_kernel_sync(fd: int) -> KernelSync | None:
    """Kernel syncs of ``fd``, or ``None`` (logged) where the kernel or the platform cannot run them."""
    try:
        found = KernelSync(fd)
    except OSError as error:
        log.info("syncing the write-ahead log on a thread: kernel AIO syncs are not available here (%s)", error)
        return None
    log.info("syncing the write-ahead log with kernel AIO syncs, for the event loop")
    return found
