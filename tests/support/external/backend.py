"""An external DTS endpoint for the scenario suites: where it is, how to sign in, and which task hub each scenario uses.

Configured by ``--backend URL`` (or ``--endpoint``), ``--taskhub NAME``, ``--connection-string ...`` and
``--taskhub-mode``, or by the ``DTS_TEST_*`` variables below. Clients and workers are the
``durabletask.azuremanaged`` classes, so TLS follows the URL's scheme and a token is sent when the
connection string's ``Authentication`` (or ``DTS_TEST_TOKEN``) asks for one.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import grpc

from durabletask import client
from durabletask._grpc.channel import create_channel
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.azuremanaged._metadata import sync_interceptors
from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient, DurableTaskSchedulerClient
from durabletask.azuremanaged.connection_string import DurableTaskSchedulerConnectionString
from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker
from tests.support.endpoint import AUTHENTICATION_ENV, BACKEND_ENV, TOKEN_ENV, Made, StaticToken

ROOT = Path(__file__).resolve().parents[3]

TASKHUB_ENV = "DTS_TEST_TASKHUB"
CONNECTION_STRING_ENV = "DTS_TEST_CONNECTION_STRING"
TASKHUB_MODE_ENV = "DTS_TEST_TASKHUB_MODE"
#: Put first on a child's PYTHONPATH when a fixed token must reach code that reads only connection strings.
TOKEN_SITE = Path(__file__).resolve().parent / "token_site"

# fresh: a new task hub per scenario, deleted afterwards (the backend must answer CreateTaskHub);
# exclusive: the one task hub is ours alone (e.g. a throwaway emulator container), scenarios take turns;
# shared: others may use the task hub too, so scenarios that act on the whole hub are skipped;
# auto: fresh when the backend creates task hubs, else shared.
TASKHUB_MODES = ("auto", "fresh", "exclusive", "shared")
# Answers to CreateTaskHub meaning "not here", as opposed to a backend that is down or refuses us.
_NO_HUB_CREATION = {
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
}


@dataclass(frozen=True)
class Backend:
    """One external endpoint and the shared task hub named for it."""

    endpoint: str
    taskhub: str = "default"
    authentication: str = "None"
    token: str | None = None
    taskhub_mode: str = "auto"

    @classmethod
    def resolve(
        cls,
        environ: Mapping[str, str],
        *,
        backend: str | None = None,
        taskhub: str | None = None,
        connection_string: str | None = None,
        taskhub_mode: str | None = None,
    ) -> Backend | None:
        """The configured backend (options win over the environment), or ``None`` for our in-process emulator."""
        connection_string = connection_string or environ.get(CONNECTION_STRING_ENV)
        backend = backend or environ.get(BACKEND_ENV)
        mode = taskhub_mode or environ.get(TASKHUB_MODE_ENV) or "auto"
        if mode not in TASKHUB_MODES:
            raise ValueError(f"--taskhub-mode must be one of {', '.join(TASKHUB_MODES)}, got {mode!r}")
        token = environ.get(TOKEN_ENV) or None
        if connection_string:
            parsed = DurableTaskSchedulerConnectionString.parse(connection_string)
            return cls(
                _with_scheme(parsed.endpoint, secure=True),
                taskhub or parsed.task_hub,
                parsed.authentication,
                token,
                mode,
            )
        if not backend:
            return None
        # A bare host:port is plaintext, as the suite's --endpoint always was; https:// turns TLS on.
        return cls(
            _with_scheme(backend, secure=False), taskhub or environ.get(TASKHUB_ENV) or "default", "None", token, mode
        )

    def credential(self) -> Any:
        if self.token:
            return StaticToken(self.token)
        parsed = DurableTaskSchedulerConnectionString(
            endpoint=self.endpoint, task_hub=self.taskhub, authentication=self.authentication
        )
        return parsed.create_credential()

    def client(self, taskhub: str, interceptors: Sequence[Any] = ()) -> DurableTaskSchedulerClient:
        return DurableTaskSchedulerClient(
            host_address=self.endpoint,
            taskhub=taskhub,
            token_credential=self.credential(),
            interceptors=list(interceptors),
        )

    def async_client(self, taskhub: str, interceptors: Sequence[Any] = ()) -> AsyncDurableTaskSchedulerClient:
        return AsyncDurableTaskSchedulerClient(
            host_address=self.endpoint,
            taskhub=taskhub,
            token_credential=self.credential(),
            interceptors=list(interceptors),
        )

    def worker(self, taskhub: str, interceptors: Sequence[Any] = (), **kwargs: Any) -> DurableTaskSchedulerWorker:
        return DurableTaskSchedulerWorker(
            host_address=self.endpoint,
            taskhub=taskhub,
            token_credential=self.credential(),
            interceptors=list(interceptors),
            **kwargs,
        )

    def connection_string(self, taskhub: str) -> str:
        return f"Endpoint={self.endpoint};Authentication={self.authentication};TaskHub={taskhub}"

    def cli_args(self, taskhub: str) -> list[str]:
        """Where the ``durabletask`` command line should connect."""
        if self.authentication != "None":
            return ["--connection-string", self.connection_string(taskhub)]
        return ["--endpoint", self.endpoint, "--taskhub", taskhub, *(["--token", self.token] if self.token else [])]

    def environment(self) -> dict[str, str]:
        """The variables that hand this backend to child processes (interop peers, nested runs)."""
        found = {
            BACKEND_ENV: self.endpoint,
            TASKHUB_ENV: self.taskhub,
            AUTHENTICATION_ENV: self.authentication,
            TASKHUB_MODE_ENV: self.taskhub_mode,
        }
        if self.token:
            found[TOKEN_ENV] = self.token
        return found

    def child_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` for a child that reads only a connection string; a fixed token reaches it via sitecustomize."""
        paths = [str(TOKEN_SITE)] if self.token else []
        paths.append(str(ROOT))
        return {**base, **self.environment(), "PYTHONPATH": os.pathsep.join(paths)}

    # Task hubs ---------------------------------------------------------------------------------------------------

    def _stub(self, taskhub: str) -> tuple[grpc.Channel, pb_grpc.TaskHubSidecarServiceStub]:
        chain = sync_interceptors(None, taskhub=taskhub, token_credential=self.credential(), resource_id=None)
        channel = create_channel(self.endpoint, interceptors=chain)
        return channel, pb_grpc.TaskHubSidecarServiceStub(channel)

    def create_taskhub(self, name: str) -> grpc.StatusCode | None:
        """Create ``name``; ``None`` when done, else the status with which the backend declined."""
        channel, stub = self._stub(name)
        with channel:
            try:
                stub.CreateTaskHub(pb.CreateTaskHubRequest(), timeout=30)
            except grpc.RpcError as error:
                code: grpc.StatusCode = error.code()
                if code in _NO_HUB_CREATION:
                    return code
                raise
        return None

    def history(self, taskhub: str, instance_id: str) -> list[pb.HistoryEvent]:
        """The instance's history as protocol events (what the recovery checks read)."""
        channel, stub = self._stub(taskhub)
        with channel:
            chunks = stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=instance_id), timeout=30)
            return [event for chunk in chunks for event in chunk.events]

    def delete_taskhub(self, name: str) -> None:
        channel, stub = self._stub(name)
        with channel:
            stub.DeleteTaskHub(pb.DeleteTaskHubRequest(), timeout=30)


def _with_scheme(address: str, *, secure: bool) -> str:
    if "://" in address:
        return address.rstrip("/")
    return f"{'https' if secure else 'http'}://{address}"


@dataclass
class TaskHubs:
    """Hands each scenario a task hub according to the mode; asks the backend once whether it creates hubs."""

    backend: Backend
    declined: str | None = None  # why the backend gave no fresh hub, for the summary
    left_behind: list[str] = field(default_factory=list)  # what could not be removed from the shared hub
    _fresh: bool | None = None

    @property
    def fresh(self) -> bool:
        if self._fresh is None:
            self._fresh = self._probe()
        return self._fresh

    def _probe(self) -> bool:
        mode = self.backend.taskhub_mode
        if mode in ("exclusive", "shared"):
            self.declined = f"--taskhub-mode {mode}"
            return False
        probe = new_taskhub_name()
        code = self.backend.create_taskhub(probe)
        if code is None:
            self.backend.delete_taskhub(probe)
            return True
        if mode == "fresh":
            raise RuntimeError(f"--taskhub-mode fresh, but the backend answered CreateTaskHub with {code.name}")
        self.declined = f"CreateTaskHub answered {code.name}"
        return False

    @property
    def whole_hub_allowed(self) -> bool:
        """Whether scenarios that list, purge or clean the whole task hub may run (nobody else uses it)."""
        return self.fresh or self.backend.taskhub_mode == "exclusive"

    def open(self) -> str:
        """A task hub for one scenario: a new one, or the shared one."""
        return self.open_named(new_taskhub_name()) if self.fresh else self.backend.taskhub

    def open_named(self, name: str) -> str:
        """Create the fresh hub ``name`` (only when :attr:`fresh`)."""
        if self.backend.create_taskhub(name) is not None:
            raise RuntimeError(f"the backend stopped creating task hubs (asked for {name})")
        return name

    def clean(self, name: str, made: Made) -> None:
        """On the shared hub, remove what the scenario made (call it while its workers still run)."""
        if not self.fresh:
            with self.backend.client(name) as c:
                self.left_behind.extend(made.remove(c))

    @contextlib.contextmanager
    def emptied_afterwards(self, name: str) -> Iterator[None]:
        """On a hub used exclusively (not fresh), remove every instance made meanwhile; nobody else's exist."""
        since = datetime.now(timezone.utc) - timedelta(seconds=1)
        try:
            yield
        finally:
            if not self.fresh:
                with self.backend.client(name) as c:
                    self.left_behind.extend(_empty(c, since))

    def release(self, name: str) -> None:
        """Delete a fresh hub once the scenario's workers have stopped."""
        if self.fresh:
            self.backend.delete_taskhub(name)


def _empty(c: client.TaskHubGrpcClient, since: datetime) -> list[str]:
    """Terminate and purge every instance created since ``since``; returns what stays."""
    made = Made()
    for state in c.get_all_orchestration_states(client.OrchestrationQuery(created_time_from=since)):
        made.add(state.instance_id)
    return made.remove(c)


def new_taskhub_name() -> str:
    return f"dtstest{uuid.uuid4().hex[:12]}"
