"""Extended-session affinity: which stream holds a live orchestration, and what it has already seen."""

from __future__ import annotations

import threading

from dtscale_emulator.engine.work import SessionMark
from dtscale_emulator.protocol import pb
from dtscale_emulator.protocol.extensions import EXTENDED_SESSIONS_CAPABILITY


def advertised(request: pb.GetWorkItemsRequest) -> tuple[bool, bool]:
    """Whether a stream keeps extended sessions, and whether it can stream histories."""
    capabilities = set(request.capabilities)
    return EXTENDED_SESSIONS_CAPABILITY in capabilities, pb.WORKER_CAPABILITY_HISTORY_STREAMING in capabilities


class SessionTable:
    """Marks by (hub, instance): the stream that holds the instance live and the history it has seen.

    A mark is taken out when its stream's lease of the instance's next work item is stored (not
    before: a lease that fails leaves it in place) and put back only when that work item completes
    successfully, so anything else (an abandoned or expired lease, a
    refused completion, a vanished stream) leaves the next work item to carry the full history.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._marks: dict[tuple[str, str], tuple[int, SessionMark]] = {}
        # Streams still connected; a completion that lands after its stream ended keeps no mark, or
        # the mark would send every other stream past the instance forever.
        self._live: set[int] = set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._marks)

    def view(self, stream_id: int, keeps_sessions: bool) -> StreamSessions:
        """Registers a connected stream (until :meth:`drop_stream`) and returns its view."""
        with self._lock:
            self._live.add(stream_id)
        return StreamSessions(self, stream_id, keeps_sessions)

    def held_elsewhere(self, stream_id: int, hub: str, instance_id: str) -> bool:
        with self._lock:
            held = self._marks.get((hub, instance_id))
        return held is not None and held[0] != stream_id

    def peek(self, stream_id: int, hub: str, instance_id: str) -> SessionMark | None:
        with self._lock:
            held = self._marks.get((hub, instance_id))
        return held[1] if held is not None and held[0] == stream_id else None

    def take(self, stream_id: int, hub: str, instance_id: str) -> None:
        with self._lock:
            held = self._marks.get((hub, instance_id))
            if held is not None and held[0] == stream_id:
                del self._marks[(hub, instance_id)]

    def keep(self, stream_id: int, hub: str, instance_id: str, mark: SessionMark) -> None:
        with self._lock:
            if stream_id in self._live:
                self._marks[(hub, instance_id)] = (stream_id, mark)

    def forget(self, hub: str, instance_id: str) -> None:
        with self._lock:
            self._marks.pop((hub, instance_id), None)

    def drop_all(self) -> None:
        """Forgets every mark (the store they describe was emptied)."""
        with self._lock:
            self._marks.clear()

    def drop_stream(self, stream_id: int) -> set[str]:
        """Forgets a stream's sessions; returns the hubs in which it held any (their instances are free now)."""
        with self._lock:
            self._live.discard(stream_id)
            held = [k for k, (owner, _) in self._marks.items() if owner == stream_id]
            for key in held:
                del self._marks[key]
        return {hub for hub, _ in held}

    def drop_hub(self, hub: str) -> None:
        with self._lock:
            for key in [k for k in self._marks if k[0] == hub]:
                del self._marks[key]


class StreamSessions:
    """One stream's view of the table (the engine's ``Affinity``)."""

    def __init__(self, table: SessionTable, stream_id: int, keeps_sessions: bool) -> None:
        self._table = table
        self._stream_id = stream_id
        self._keeps = keeps_sessions

    def held_elsewhere(self, hub: str, instance_id: str) -> bool:
        return self._table.held_elsewhere(self._stream_id, hub, instance_id)

    def mark(self, hub: str, instance_id: str) -> SessionMark | None:
        return self._table.peek(self._stream_id, hub, instance_id) if self._keeps else None

    def take(self, hub: str, instance_id: str) -> None:
        if self._keeps:
            self._table.take(self._stream_id, hub, instance_id)
