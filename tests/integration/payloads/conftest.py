"""Large-payload fixtures: a real Azurite for the blob store, the emulator in-process, clients and workers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from durabletask import client, worker
from durabletask.payload import PayloadStore
from tests.support.azurite import Azurite


@pytest.fixture(scope="session")
def emulator_server() -> Iterator[Any]:
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def emulator_port(emulator_server: Any) -> int:
    port: int = emulator_server.port
    return port


@pytest.fixture
def blob_store(azurite: Azurite) -> Iterator[Any]:
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    store = BlobPayloadStore(
        BlobPayloadStoreOptions(connection_string=azurite.connection_string, container_name=f"c{uuid.uuid4().hex}")
    )
    yield store
    store.close()


class Side:
    """A task hub on the emulator with factories for clients and workers that share one payload store."""

    def __init__(self, port: int, store: PayloadStore | None, stack: ExitStack) -> None:
        self.address = f"localhost:{port}"
        self.metadata = [("taskhub", f"t{uuid.uuid4().hex[:12]}")]
        self.store = store
        self._stack = stack

    def client(self, store: Any = "same") -> client.TaskHubGrpcClient:
        c = client.TaskHubGrpcClient(
            host_address=self.address, metadata=self.metadata, payload_store=self.store if store == "same" else store
        )
        self._stack.callback(c.close)
        return c

    def async_client(self) -> client.AsyncTaskHubGrpcClient:
        return client.AsyncTaskHubGrpcClient(
            host_address=self.address, metadata=self.metadata, payload_store=self.store
        )

    def worker(
        self, *orchestrators: Any, activities: tuple[Any, ...] = (), entities: tuple[Any, ...] = (), store: Any = "same"
    ) -> worker.TaskHubGrpcWorker:
        w = worker.TaskHubGrpcWorker(
            host_address=self.address, metadata=self.metadata, payload_store=self.store if store == "same" else store
        )
        for fn in orchestrators:
            w.add_orchestrator(fn)
        for fn in activities:
            w.add_activity(fn)
        for fn in entities:
            w.add_entity(fn)
        w.start()
        self._stack.callback(w.stop)
        return w


@pytest.fixture
def blob_side(emulator_port: int, blob_store: Any) -> Iterator[Side]:
    with ExitStack() as stack:
        yield Side(emulator_port, blob_store, stack)
