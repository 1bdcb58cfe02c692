"""A TCP relay between a worker and the emulator that can cut the network for a while: a backend outage in which
the backend itself keeps running (and so keeps its leases), unlike a restart."""

from __future__ import annotations

import contextlib
import socket
import threading


class CuttableRelay:
    """Relays ``127.0.0.1:port`` to ``target``; :meth:`cut` drops every connection and refuses new ones until
    :meth:`restore`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.refused = 0  # connections turned away while cut
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self) -> None:
        self._up.clear()
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            _drop(sock)

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._up.is_set():
                self.refused += 1
                _drop(client)
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                _drop(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), name="relay-pump", daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.difference_update((source, sink))
            _drop(source)
            _drop(sink)


def _drop(sock: socket.socket) -> None:
    # shutdown() first: it wakes a thread blocked in recv() on the socket, which close() alone does not.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
