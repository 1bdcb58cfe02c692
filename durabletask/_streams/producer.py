"""An activity's stream output: items batched on a background thread and sent as entity signals while it runs."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from durabletask._codec import Codec
from durabletask._streams import wire

#: How long items wait to be batched together before they are sent.
FLUSH_INTERVAL = 0.05
#: What a publishing activity may hold unsent before ``publish`` waits for the sender (bounded memory).
MAX_BUFFERED_BYTES = 4 * wire.MAX_BATCH_BYTES
#: How long ``close`` waits for the head to store the last batch.
STORE_TIMEOUT = 30.0

Send = Callable[[str, str], None]
"""``send(entity_id, encoded_batch)``: one ``SignalEntity`` call."""
ReadHead = Callable[[str], "dict[str, Any] | None"]
"""``read(entity_id)``: the head's state, or ``None``."""


class ActivityPublisher:
    """The publisher of one activity attempt.

    Items are sent by one thread, in the order published: the first at once, then while items keep coming one batch
    (up to 256 KiB) at most every 50 ms; a batch that
    fails to send is sent again with the same number, which the head recognizes, so none is stored twice.
    ``close`` sends what is left and waits until the head has stored it, so that an activity's items are in
    the stream before its result is: a subscriber that sees the orchestration end has all of them to read.
    """

    def __init__(
        self,
        instance_id: str,
        execution_id: str,
        task_id: int,
        codec: Codec,
        send: Send,
        read: ReadHead,
        *,
        logger: logging.Logger,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self._head = str(wire.head_entity(instance_id))
        self._execution_id = execution_id
        self._task_id = task_id
        self._run = uuid.uuid4().hex[:12]
        self._codec = codec.for_instance(instance_id)
        self._send = send
        self._read = read
        self._logger = logger
        self._clock = clock
        self._lock = threading.Condition()
        self._entries: list[list[Any]] = []
        self._buffered = 0
        self._sent = 0  # the number of the last batch the head has accepted from this attempt
        self._closed = False
        self._thread: threading.Thread | None = None

    def publish(self, value: Any, topic: str = wire.DEFAULT_TOPIC) -> None:
        entry = wire.encode_item(self._codec, value, topic, self._clock())
        size = wire.entry_size(entry)
        with self._lock:
            if self._closed:
                raise wire.PublishError("publish: the activity has returned; nothing more can be published from it")
            while self._buffered + size > MAX_BUFFERED_BYTES and self._entries:
                self._lock.wait(0.1)  # the sender is behind: hold the producer rather than the memory
            self._entries.append(entry)
            self._buffered += size
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._flush_loop, name="durabletask-stream-publisher", daemon=True
                )
                self._thread.start()
            elif len(self._entries) == 1 or self._buffered >= wire.MAX_BATCH_BYTES:
                self._lock.notify_all()  # the sender sleeps on an empty buffer, or a batch is full

    @property
    def used(self) -> bool:
        """Whether anything was published."""
        return self._thread is not None

    def close(self) -> None:
        """Send what is left, then wait (bounded) until the head has stored it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._lock.notify_all()
            thread = self._thread
        if thread is None:
            return
        thread.join()
        self._await_stored()

    def _take(self) -> list[list[Any]]:
        taken: list[list[Any]] = []
        size = 0
        while self._entries:
            entry_size = wire.entry_size(self._entries[0])
            if taken and size + entry_size > wire.MAX_BATCH_BYTES:
                break
            taken.append(self._entries.pop(0))
            size += entry_size
        self._buffered -= size
        self._lock.notify_all()
        return taken

    def _flush_loop(self) -> None:
        # The first item after a quiet spell goes out at once; while items keep coming, one batch at most every
        # FLUSH_INTERVAL carries all that arrived since the last (fewer signals, each with more items).
        last_sent = 0.0
        while True:
            with self._lock:
                while not self._closed and not self._entries:
                    self._lock.wait()
                while not self._closed and self._buffered < wire.MAX_BATCH_BYTES:
                    left = last_sent + FLUSH_INTERVAL - time.monotonic()
                    if left <= 0:
                        break
                    self._lock.wait(left)
                entries = self._take()
                done = self._closed and not self._entries
            if entries:
                self._send_batch(entries)
                last_sent = time.monotonic()
            if done:
                return

    def _send_batch(self, entries: list[list[Any]]) -> None:
        number = self._sent + 1
        batch = wire.activity_batch(self._execution_id, self._task_id, self._run, number, entries)
        encoded = json.dumps(batch, separators=(",", ":"))
        pause = 0.05
        while True:
            try:
                self._send(self._head, encoded)
                break
            except Exception as error:  # the channel is down: the same batch again, until it goes through
                self._logger.warning("stream batch %d of task %d not sent (%s); retrying", number, self._task_id, error)
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
        self._sent = number

    def _await_stored(self) -> None:
        producer = wire.activity_batch(self._execution_id, self._task_id, self._run, 0, [])["p"]
        deadline = time.monotonic() + STORE_TIMEOUT
        pause = 0.005
        while time.monotonic() < deadline:
            try:
                state = self._read(self._head)
            except ValueError as error:  # not JSON: a payload store keeps the head's state, so it cannot be checked
                self._logger.debug("the stream head's state cannot be read here (%s); not waiting for it", error)
                return
            except Exception as error:
                self._logger.debug("reading the stream head failed: %s", error)
                state = None
            if state is not None and int(state["prod"].get(producer, 0)) >= self._sent:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        self._logger.warning(
            "the stream items of task %d were sent but not yet stored after %.0fs; is a worker taking entity work?",
            self._task_id,
            STORE_TIMEOUT,
        )
