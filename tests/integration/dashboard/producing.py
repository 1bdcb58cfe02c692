"""A worker whose activity heartbeats and publishes stream items on command, for the dashboard's live views.

Each instance of :func:`producer` runs one bounded activity (timeouts and a heartbeat timeout) that waits for
commands from the test: publish these items, heartbeat with these details, or return. So a test decides exactly
what the dashboard has to show, and when, without sleeping. Everything runs in-process against our emulator.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from dtscale_emulator.dashboard import Dashboard, start
from dtscale_emulator.dashboard.connect import endpoint_clients
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker

HUB = "default"
#: The retention cap the worker is configured with: the smallest allowed, so a test can pass it.
CAP = 64 * 1024
#: The timeouts of the producing activity, as the dashboard should show them (seconds).
TIMEOUTS = {"start_to_close": 600.0, "schedule_to_close": 900.0, "heartbeat": 120.0}
WAIT = 60

_commands: dict[str, queue.Queue[tuple[str, Any]]] = {}
_lock = threading.Lock()


def commands(instance_id: str) -> queue.Queue[tuple[str, Any]]:
    with _lock:
        return _commands.setdefault(instance_id, queue.Queue())


def produce(ctx: task.ActivityContext, _: Any) -> int:
    """Carries out the test's commands for its instance until told to return; returns how many items it published."""
    published = 0
    inbox = commands(ctx.orchestration_id)
    while True:
        what, value = inbox.get(timeout=WAIT)
        if what == "done":
            return published
        if what == "beat":
            ctx.heartbeat(value)
        elif what == "publish":
            for topic, data in value:
                ctx.publish(data, topic=topic)
                published += 1


def producer(ctx: task.OrchestrationContext, note: Any) -> int:
    ctx.publish({"step": "started", "note": note}, topic="status")
    published = yield ctx.call_activity(
        produce,
        input=None,
        start_to_close_timeout=timedelta(seconds=TIMEOUTS["start_to_close"]),
        schedule_to_close_timeout=timedelta(seconds=TIMEOUTS["schedule_to_close"]),
        heartbeat_timeout=timedelta(seconds=TIMEOUTS["heartbeat"]),
    )
    ctx.publish({"step": "finished"}, topic="status")
    return int(published)


@dataclass
class Producing:
    server: EmulatorServer
    dashboard: Dashboard
    client: client.TaskHubGrpcClient

    @property
    def url(self) -> str:
        return self.dashboard.url

    def start(self, instance_id: str, note: Any = None) -> str:
        found = self.client.schedule_new_orchestration(producer, input=note, instance_id=instance_id)
        self.client.wait_for_orchestration_start(found, timeout=WAIT)
        return found

    def publish(self, instance_id: str, items: list[tuple[str, Any]]) -> None:
        commands(instance_id).put(("publish", items))

    def beat(self, instance_id: str, details: Any) -> None:
        commands(instance_id).put(("beat", details))

    def finish(self, instance_id: str) -> None:
        commands(instance_id).put(("done", None))
        self.client.wait_for_orchestration_completion(instance_id, timeout=WAIT)


@contextmanager
def producing(*, live_interval: float = 0.2) -> Iterator[Producing]:
    """An emulator, a worker that runs :func:`producer` and stores streams (capped at :data:`CAP`), a dashboard."""
    server = EmulatorServer(port=0, in_memory=True, task_hubs=(HUB,)).start()
    board = aio_loop.run(start(endpoint_clients(server.address, None), [HUB], port=0, live_interval=live_interval))
    w = worker.TaskHubGrpcWorker(host_address=server.address, metadata=[("taskhub", HUB)])
    w.add_orchestrator(producer)
    w.add_activity(produce)
    w.configure_streams(max_bytes_per_instance=CAP)
    w.start()
    c = client.TaskHubGrpcClient(host_address=server.address, metadata=[("taskhub", HUB)])
    try:
        yield Producing(server, board, c)
    finally:
        for inbox in list(_commands.values()):
            inbox.put(("done", None))  # no activity is left waiting for a test that has gone
        c.close()
        w.stop()
        aio_loop.run(board.close())
        server.close()
