"""A TCP proxy that keeps the backend's side of a connection open after the client's side is gone.

It stands for a worker host that vanished without closing its connections (power loss, a network partition): the
backend sees an open, silent connection, so it keeps the work it leased there until its own timeouts say
otherwise, instead of offering it again the moment a killed process's sockets close.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class HoldingProxy:
    """Listens on a free local port and forwards each connection to ``upstream`` (``host``, ``port``)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="holding-proxy", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self._listener.accept()
            except OSError:
                return  # closed
            far = socket.create_connection(self._upstream)
            with self._lock:
                if self._closed:
                    near.close()
                    far.close()
                    return
                self._sockets += [near, far]
            threading.Thread(target=self._pump, args=(near, far, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(far, near, True), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket, drain: bool) -> None:
        """Copy ``source`` to ``target``. Toward the client (``drain``), once the client is gone, the backend's bytes
        are read and dropped, so its sends never back up; toward the backend, the client's end is never passed
        on: the backend's side stays open."""
        delivering = True
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            if delivering:
                try:
                    target.sendall(data)
                except OSError:
                    if not drain:
                        return
                    delivering = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, []
        self._listener.close()
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
