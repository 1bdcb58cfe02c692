"""Fault injection: cut or stalled work-item streams, server restarts (GOAWAY), delayed and rejected completions,
and seeded interleavings of concurrent work."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import grpc

from dtscale_emulator.errors import EmulatorError, stale_token
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.rpc.hubs import TaskHubs

log = logging.getLogger("dtscale_emulator.faults")
T = TypeVar("T")

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


def _seconds(text: str) -> float:
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * _UNITS[suffix]
    return float(text)


@dataclass(frozen=True)
class FaultProfile:
    """A schedule of faults; every field is off at 0.

    Args:
        cut_stream_every: Seconds between cutting every open GetWorkItems stream (the worker sees CANCELLED).
        stall_every: Seconds between stalling every open stream (no items, no health pings).
        stall_for: How long a stall lasts.
        goaway_every: Seconds between graceful server restarts on the same port (clients receive GOAWAY).
        goaway_grace: Grace period given to in-flight calls by each restart.
        delay_completions: Seconds every completion call waits before it is applied.
        reject_completion_every: Every Nth completion is refused as if its lease had been lost.
    """

    cut_stream_every: float = 0.0
    stall_every: float = 0.0
    stall_for: float = 5.0
    goaway_every: float = 0.0
    goaway_grace: float = 1.0
    delay_completions: float = 0.0
    reject_completion_every: int = 0

    @classmethod
    def parse(cls, text: str) -> FaultProfile:
        """Reads ``"cut_stream_every=5s,delay_completions=200ms,reject_completion_every=7"``.

        Raises:
            ValueError: for an unknown key or a value that is not a non-negative number.
        """
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, raw = part.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or key not in known:
                raise ValueError(f"unknown fault setting {part!r}; expected one of {', '.join(known)}")
            try:
                value: float = int(raw) if key == "reject_completion_every" else _seconds(raw.strip())
            except ValueError:
                raise ValueError(f"fault setting {key} needs a number, got {raw!r}") from None
            if value < 0:
                raise ValueError(f"fault setting {key} must not be negative")
            values[key] = value
        return cls(**values)

    @property
    def periodic(self) -> list[tuple[str, float]]:
        """The (fault, interval) pairs a background schedule should fire."""
        pairs = [("cut", self.cut_stream_every), ("stall", self.stall_every), ("goaway", self.goaway_every)]
        return [(name, every) for name, every in pairs if every > 0]


class _Stream:
    """One open GetWorkItems call as the injector sees it."""

    def __init__(self, context: Any, task: asyncio.Task[Any] | None) -> None:
        self.context = context
        self.task = task
        self.cut = False
        self.stalled_until = 0.0


@dataclass
class FaultStats:
    """How many times each fault fired (tests assert a fault really happened)."""

    streams: int = 0
    cuts: int = 0
    stalls: int = 0
    goaways: int = 0
    delayed: int = 0
    rejected: int = 0


class FaultInjector:
    """Misbehaves on request, through hooks the servicer calls; idle (a pass-through) until told otherwise.

    Args:
        abandon: ``(hub, token, kind)`` hands a leased work item back, as a lost lease would.
        wake: Nudges the dispatcher so cut streams notice at once.
        restart: ``(grace)`` stops the gRPC server gracefully and starts it again on the same port.
    """

    def __init__(
        self,
        abandon: Callable[[str, str, str], None],
        wake: Callable[[], None],
        restart: Callable[[float], None],
    ) -> None:
        self._abandon = abandon
        self._wake = wake
        self._restart = restart
        self._cond = threading.Condition()
        self._streams: list[_Stream] = []
        self._delay = 0.0
        self._reject_next = 0
        self._reject_every = 0
        self._completions = 0
        self._schedule_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.stats = FaultStats()

    # Test hooks ------------------------------------------------------------------------------------
    @property
    def open_streams(self) -> int:
        """GetWorkItems calls currently open."""
        with self._cond:
            return len(self._streams)

    def wait_for_streams(self, count: int, timeout: float = 10.0) -> bool:
        """Blocks until at least ``count`` streams are open; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._streams) >= count, timeout)

    def cut_streams(self) -> int:
        """Ends every open GetWorkItems call abruptly (RST_STREAM, seen as CANCELLED); returns how many."""
        with self._cond:
            victims = [s for s in self._streams if not s.cut]
            for stream in victims:
                stream.cut = True
            self.stats.cuts += len(victims)
            self._cond.notify_all()
        for stream in victims:
            task = stream.task
            if task is not None:
                # Interrupts the handler wherever it waits; it then ends the call with CANCELLED.
                aio_loop.call_soon(task.cancel)
        self._wake()
        return len(victims)

    def stall_streams(self, seconds: float) -> int:
        """Every open stream sends nothing, not even health pings, for ``seconds``; returns how many."""
        until = time.monotonic() + seconds
        with self._cond:
            for stream in self._streams:
                stream.stalled_until = until
            self.stats.stalls += len(self._streams)
            return len(self._streams)

    def goaway(self, grace: float = 1.0) -> None:
        """Restarts the gRPC server on the same port; open connections receive GOAWAY."""
        with self._cond:
            self.stats.goaways += 1
        self._restart(grace)

    def delay_completions(self, seconds: float) -> None:
        """Every completion call waits ``seconds`` before it is applied (0 turns the delay off)."""
        self._delay = seconds

    def reject_next_completions(self, count: int = 1) -> None:
        """The next ``count`` completions are refused and their work items handed back (a lost lease)."""
        with self._cond:
            self._reject_next += count

    def reject_every(self, n: int) -> None:
        """Every ``n``-th completion is refused as a lost lease (0 turns this off)."""
        with self._cond:
            self._reject_every = n

    def clear(self) -> None:
        """Turns every fault off and ends any stall."""
        self.stop_schedule()
        with self._cond:
            self._delay, self._reject_next, self._reject_every = 0.0, 0, 0
            for stream in self._streams:
                stream.stalled_until = 0.0
            self._cond.notify_all()

    # Schedules -------------------------------------------------------------------------------------
    def apply(self, profile: FaultProfile) -> None:
        """Turns on the profile's steady faults and starts a thread per periodic one."""
        self.stop_schedule()
        self.delay_completions(profile.delay_completions)
        self.reject_every(profile.reject_completion_every)
        self._schedule_stop = threading.Event()
        for name, every in profile.periodic:
            thread = threading.Thread(
                target=self._repeat, args=(name, every, profile, self._schedule_stop), daemon=True, name=f"fault-{name}"
            )
            thread.start()
            self._threads.append(thread)

    def stop_schedule(self) -> None:
        """Stops periodic faults (steady ones such as delays stay until :meth:`clear`)."""
        self._schedule_stop.set()
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(timeout=30)
        self._threads = []

    def _repeat(self, name: str, every: float, profile: FaultProfile, stop: threading.Event) -> None:
        while not stop.wait(every):
            try:
                if name == "cut":
                    log.info("fault: cut %d streams", self.cut_streams())
                elif name == "stall":
                    log.info("fault: stalled %d streams", self.stall_streams(profile.stall_for))
                else:
                    log.info("fault: restarting the server (GOAWAY)")
                    self.goaway(profile.goaway_grace)
            except Exception:
                log.exception("fault %s failed", name)

    # Hooks (called by the servicer) ---------------------------------------------------------------
    async def serve_stream(
        self, context: Any, serve: Callable[[Callable[[Any], Awaitable[None]]], Awaitable[None]]
    ) -> None:
        """Runs one GetWorkItems call, ``serve(send)``, under the faults: each item passes the gate first.

        A cut ends the call with CANCELLED; a stall holds items (and health pings) back.
        """
        stream = _Stream(context, asyncio.current_task())
        with self._cond:
            self._streams.append(stream)
            self.stats.streams += 1
            self._cond.notify_all()

        async def send(item: Any) -> None:
            if (stream.cut or stream.stalled_until) and not await self._may_send(stream):
                raise asyncio.CancelledError  # cut, or the caller left during a stall: the stream ends here
            await context.write(item)

        try:
            await serve(send)
        except asyncio.CancelledError:
            if stream.cut:
                await context.abort(grpc.StatusCode.CANCELLED, "work-item stream cut by fault injection")
            raise
        finally:
            with self._cond:
                self._streams.remove(stream)
                self._cond.notify_all()

    async def _may_send(self, stream: _Stream) -> bool:
        """Holds an item while its stream is stalled; False once the stream was cut or its caller left."""
        while True:
            if stream.cut or stream.context.done():
                return False
            remaining = stream.stalled_until - time.monotonic()
            if remaining <= 0:
                return True
            # Short steps, so a cut or a departed caller ends the stall promptly.
            await asyncio.sleep(min(remaining, 0.05))

    async def before_completion(self, request: Any, context: Any, kind: str) -> None:
        """Delays or refuses a completion call as configured (refusing hands the work item back first)."""
        delay = self._delay
        if delay > 0:
            with self._cond:
                self.stats.delayed += 1
            await asyncio.sleep(delay)  # an injected latency
        if self._should_reject():
            token = request.completionToken
            hub = TaskHubs.name_in(context.invocation_metadata() or ())
            # A token that is already gone makes the rejection below simply true.
            with contextlib.suppress(EmulatorError):
                self._abandon(hub, token, kind)
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(stale_token(token)))

    def _should_reject(self) -> bool:
        if not self._reject_next and not self._reject_every:
            return False  # no rejection is armed (the usual case)
        with self._cond:
            self._completions += 1
            reject = self._reject_next > 0 or (self._reject_every > 0 and self._completions % self._reject_every == 0)
            if self._reject_next > 0:
                self._reject_next -= 1
            if reject:
                self.stats.rejected += 1
            return reject


@dataclass(frozen=True)
class InterleavingRates:
    """How often a :class:`SeededInterleaver` perturbs each point (shares between 0 and 1).

    Args:
        pause: Points at which other work runs first (half of them yield once, half wait up to ``max_delay``).
        max_delay: The longest pause, in seconds.
        expire: Sends and completions whose lease ends first, as if it had timed out.
        drop: Sends that drop their stream instead.
        repeat: Completions the worker sends twice.
        tick: Pauses during which time moves on (with ``advance``): timers and leases come due mid-flight.
        shuffle: Batches of work items leased together that go out in another order.
    """

    pause: float = 0.5
    max_delay: float = 0.01
    expire: float = 0.04
    drop: float = 0.01
    repeat: float = 0.05
    tick: float = 0.1
    shuffle: float = 0.5


class SeededInterleaver:
    """An :class:`~dtscale_emulator.engine.work.Interleaver` whose every decision follows from a seed.

    A decision depends on the seed, the point, the key and how often that key met that point before, not on
    what other work did first: the same seed perturbs the same work the same way in another run, although
    the workers' own timing can still vary what meets what.

    Args:
        seed: Chooses every decision.
        rates: How often each point is perturbed.
        advance: Moves the emulator's clock on (a :class:`~dtscale_emulator.ops.clock.ManualClock` step), for ``tick``.
    """

    def __init__(
        self, seed: int, rates: InterleavingRates | None = None, advance: Callable[[], object] | None = None
    ) -> None:
        self.rates = rates or InterleavingRates()
        self._advance = advance
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        """Starts over with ``seed``: counts, statistics and accepted tokens are forgotten."""
        with self._lock:
            self.seed = seed
            self._met: dict[tuple[str, str], int] = {}
            #: Points met so far.
            self.steps = 0
            #: How often each perturbation happened: pause, tick, expire, drop, repeat, shuffle.
            self.stats: dict[str, int] = {}
            self._accepted: set[str] = set()
            #: ``(kind, token)`` of every completion accepted more than once.
            self.double_completions: list[tuple[str, str]] = []
            #: ``(point, key, choice)`` of every choice other than the usual one, in the order made.
            self.choices: list[tuple[str, str, str]] = []

    def _rng(self, point: str, key: str) -> random.Random:
        with self._lock:
            count = self._met.get((point, key), 0)
            self._met[(point, key)] = count + 1
            self.steps += 1
            seed = self.seed
        return random.Random(f"{seed}/{point}/{key}/{count}")

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] = self.stats.get(what, 0) + 1

    async def pause(self, point: str, key: str) -> None:
        rng = self._rng(point, key)
        rates = self.rates
        if self._advance is not None and rng.random() < rates.tick:
            self._count("tick")
            self._advance()
        if rng.random() >= rates.pause:
            return
        self._count("pause")
        await asyncio.sleep(rng.uniform(0.0, rates.max_delay) if rng.random() < 0.5 else 0)

    def choose(self, point: str, key: str, options: Sequence[str]) -> str:
        rng = self._rng(point, key)
        rates = {"expire": self.rates.expire, "drop": self.rates.drop, "repeat": self.rates.repeat}
        for option in options[1:]:
            if rng.random() < rates.get(option, 0.0):
                self._count(option)
                with self._lock:
                    self.choices.append((point, key, option))
                return option
        return options[0]

    def shuffle(self, point: str, items: list[T]) -> list[T]:
        rng = self._rng(point, str(len(items)))
        if rng.random() >= self.rates.shuffle:
            return items
        shuffled = list(items)
        rng.shuffle(shuffled)
        if any(a is not b for a, b in zip(shuffled, items, strict=True)):
            self._count("shuffle")
        return shuffled

    def committed(self, kind: str, token: str) -> None:
        with self._lock:
            if token in self._accepted:
                self.double_completions.append((kind, token))
            self._accepted.add(token)
