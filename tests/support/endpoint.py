"""How a test process uses an external backend: the credential the test run hands down, and what to clean up.

Imported by the pytest process (our SDK) and by the interop peer (Microsoft's SDK), so it uses only gRPC, the
client API both SDKs share, azure-core and azure-identity. ``tests/support/external/backend.py`` sets the variables.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from durabletask import client
from durabletask.entities import EntityInstanceId

#: A fixed bearer token, for an emulator started with ``--auth-token`` (never a real service's secret).
TOKEN_ENV = "DTS_TEST_TOKEN"
#: The connection string's ``Authentication`` value; anything but ``None`` uses azure-identity.
AUTHENTICATION_ENV = "DTS_TEST_AUTHENTICATION"
#: Set to the endpoint while a run targets an external backend, where scenarios remove what they made.
BACKEND_ENV = "DTS_TEST_BACKEND"
_FINAL = {
    client.OrchestrationStatus.COMPLETED,
    client.OrchestrationStatus.FAILED,
    client.OrchestrationStatus.TERMINATED,
}


class StaticToken:
    """A credential that always hands out the same bearer token, valid for the next hour."""

    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, int(time.time()) + 3600)


def credential() -> Any:
    """The credential the environment asks for: a fixed token, azure-identity's default chain, or none."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return StaticToken(token)
    if os.environ.get(AUTHENTICATION_ENV, "None") == "None":
        return None
    # Microsoft's SDK reads no connection strings, so both sides use the chain that covers CI logins
    # (azure/login leaves an Azure CLI session) and workload identity alike.
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


@dataclass
class Made:
    """What a scenario created, recorded from its clients' and workers' calls, so it can be removed afterwards.

    Clients start instances and signal entities; workers' completions start sub-orchestrations and reach
    entities, and entities' results start orchestrations and signal other entities.
    """

    instances: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)

    def add(self, instance_id: str) -> None:
        """Record an instance made by a process whose calls are not seen (e.g. the command line)."""
        _append_new(self.instances, instance_id)

    def record_request(self, method: str | bytes, request: Any) -> None:
        """Before the call: what a completion or signal will make, so it is known before it can exist."""
        name = _rpc_name(method)
        if name == "SignalEntity":
            _append_new(self.entities, request.instanceId)
        elif name == "CompleteOrchestratorTask":
            for action in request.actions:
                self._orchestrator_action(action)
        elif name == "CompleteEntityTask":
            for operation in request.actions:
                if operation.HasField("startNewOrchestration"):
                    self.add(operation.startNewOrchestration.instanceId)
                elif operation.HasField("sendSignal"):
                    _append_new(self.entities, operation.sendSignal.instanceId)

    def record_response(self, method: str | bytes, response: Any) -> None:
        """After a start or restart: the instance the backend made (a restart may choose a new ID)."""
        if _rpc_name(method) in ("StartInstance", "RestartInstance"):
            self.add(response.instanceId)

    def _orchestrator_action(self, action: Any) -> None:
        if action.HasField("createSubOrchestration"):
            self.add(action.createSubOrchestration.instanceId)
        if not action.HasField("sendEntityMessage"):
            return
        message = action.sendEntityMessage
        kind = message.WhichOneof("EntityMessageType")
        if kind == "entityOperationSignaled":
            _append_new(self.entities, message.entityOperationSignaled.targetInstanceId.value)
        elif kind == "entityOperationCalled":
            _append_new(self.entities, message.entityOperationCalled.targetInstanceId.value)
        elif kind == "entityLockRequested":
            for entity in message.entityLockRequested.lockSet:
                _append_new(self.entities, entity)

    def interceptor(self) -> Any:
        return _Recorder(self)

    def async_interceptor(self) -> Any:
        return _AsyncRecorder(self)

    def remove(self, c: client.TaskHubGrpcClient, wait: float = 15.0) -> list[str]:
        """Terminate what still runs, purge everything (entities too, where the backend purges them by ID).

        Returns the IDs still there afterwards.
        """
        ids = [*self.instances, *self.entities]
        for instance_id in ids:
            _quietly(lambda i=instance_id: _terminate_if_running(c, i))
        deadline = time.monotonic() + wait
        for instance_id in ids:
            left = max(deadline - time.monotonic(), 0.1)
            _quietly(lambda i=instance_id, t=left: c.wait_for_orchestration_completion(i, timeout=t))
            _quietly(lambda i=instance_id: c.purge_orchestration(i, recursive=True))
        return [i for i in ids if _still_there(c, i)]


def _rpc_name(method: str | bytes) -> str:
    return (method.decode() if isinstance(method, bytes) else method).rsplit("/", 1)[-1]


def _append_new(found: list[str], instance_id: str) -> None:
    if instance_id and instance_id not in found:
        found.append(instance_id)


def _terminate_if_running(c: client.TaskHubGrpcClient, instance_id: str) -> None:
    state = c.get_orchestration_state(instance_id)
    if state is not None and state.runtime_status not in _FINAL:
        c.terminate_orchestration(instance_id)


def _still_there(c: client.TaskHubGrpcClient, instance_id: str) -> bool:
    if instance_id.startswith("@"):
        return c.get_entity(EntityInstanceId.parse(instance_id)) is not None
    return c.get_orchestration_state(instance_id) is not None


def _quietly(call: Any) -> None:
    # Cleanup goes on past one instance the backend refuses; what stays is reported, not raised.
    with contextlib.suppress(grpc.RpcError, TimeoutError):
        call()


class _Recorder(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, made: Made) -> None:
        self._made = made

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._made.record_request(details.method, request)
        outcome = continuation(details, request)
        if outcome.exception() is None:
            self._made.record_response(details.method, outcome.result())
        return outcome


class _AsyncRecorder(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, made: Made) -> None:
        self._made = made

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._made.record_request(details.method, request)
        call = await continuation(details, request)
        self._made.record_response(details.method, await call)
        return call
