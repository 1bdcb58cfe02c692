"""The dashboard's own async client of one task hub on any DTS endpoint: the public protocol over ``grpc.aio``.

It speaks only the published ``TaskHubSidecarService`` (with the emulator's generated stubs) and the optional
worker-view extension, so it works against our emulator, the public emulator and managed DTS alike, beside any
SDK. Every call goes through :meth:`EndpointClient._call`, which adds the hub's metadata and a deadline and turns
a failed call into an :class:`EndpointError` in one place (:func:`map_error`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timezone
from importlib import metadata as distribution
from typing import Any, Protocol, TypeVar, cast

import grpc
import grpc.aio

from dtscale_emulator.protocol import Int32Value, StringValue, Timestamp, pb, pb_grpc
from dtscale_emulator.protocol.extensions import WORKER_VIEW_METHOD, WORKER_VIEW_SERVICE

#: Seconds a unary call may take before it fails with DEADLINE_EXCEEDED.
DEFAULT_TIMEOUT = 30.0
#: Seconds the whole history stream of one instance may take.
HISTORY_TIMEOUT = 60.0
# Histories and pages of states can exceed gRPC's 4 MiB default; the service's own limits still apply.
MAX_RECEIVE_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


class BearerSource(Protocol):
    """Where the ``authorization`` header comes from: a fixed token, or credentials refreshed before expiry."""

    async def token(self) -> str: ...


class StaticBearer:
    """A token given once (the emulator's ``--auth-token``)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self._token = token

    async def token(self) -> str:
        return self._token


class EndpointError(grpc.aio.AioRpcError):
    """A call the endpoint answered with a non-OK status; ``str()`` is the service's own words, ``CODE: details``.

    It stays a ``grpc.aio.AioRpcError`` (``code()``, ``details()``), and records which method failed.
    """

    def __init__(self, code: grpc.StatusCode, details: str, method: str, trailing: Any = None) -> None:
        empty = grpc.aio.Metadata()
        super().__init__(code, empty, trailing if trailing is not None else empty, details, None)
        self.method = method

    def __str__(self) -> str:
        return f"{self.code().name}: {self.details()}"


class InvalidRequestError(EndpointError, ValueError):
    """The endpoint refused an argument (INVALID_ARGUMENT): the caller's input, shown as a bad request."""


class EndpointTimeoutError(EndpointError, TimeoutError):
    """The call's deadline passed before the endpoint answered."""


def map_error(error: grpc.aio.AioRpcError, method: str) -> EndpointError:
    """The one mapping from a failed call to the dashboard's errors."""
    code, details = error.code(), error.details() or ""
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequestError(code, details, method, error.trailing_metadata())
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return EndpointTimeoutError(code, details or f"{method} did not answer in time", method)
    return EndpointError(code, details, method, error.trailing_metadata())


@functools.cache
def _agent() -> str:
    try:
        return f"dtscale-emulator-dashboard/{distribution.version('dtscale-emulator')}"
    except distribution.PackageNotFoundError:
        return "dtscale-emulator-dashboard"


def _text(value: str | None) -> Any:
    return None if value is None else StringValue(value=value)


def _now() -> Any:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.now(timezone.utc))
    return stamp


def _at(value: datetime | None) -> Any:
    if value is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(value if value.tzinfo else value.replace(tzinfo=timezone.utc))
    return stamp


def next_token(message: Any, previous: str | None) -> str | None:
    """The continuation token of a page's answer, or ``None`` when paging is over.

    Absent, empty and ``"0"`` end it, and so does the token the page was asked with (it would loop forever).
    """
    value = str(message.continuationToken.value) if message.HasField("continuationToken") else ""
    return None if value in ("", "0") or value == previous else value


class EndpointClient:
    """Calls on one task hub of one endpoint; the channel opens on first use, on the loop that uses it.

    Args:
        target: ``host:port`` (no scheme).
        hub: The task hub, sent as ``taskhub`` metadata on every call.
        secure: TLS, trusting ``root_certificates`` (PEM) or the system's roots.
        bearer: Source of the ``authorization: Bearer`` token; ``None`` sends none.
        timeout: Seconds each unary call may take.
    """

    def __init__(
        self,
        target: str,
        hub: str,
        *,
        secure: bool = False,
        root_certificates: bytes | None = None,
        bearer: BearerSource | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not target:
            raise ValueError("the endpoint address must not be empty")
        if not hub:
            raise ValueError("the task hub name must not be empty")
        self.target, self.hub, self.secure = target, hub, secure
        self._roots = root_certificates
        self._bearer = bearer
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None

    def _open(self) -> Any:
        if self._stub is None:
            options = [("grpc.max_receive_message_length", MAX_RECEIVE_BYTES)]
            if self.secure:
                credentials = grpc.ssl_channel_credentials(root_certificates=self._roots)
                self._channel = grpc.aio.secure_channel(self.target, credentials, options=options)
            else:
                self._channel = grpc.aio.insecure_channel(self.target, options=options)
            self._stub = pb_grpc.TaskHubSidecarServiceStub(self._channel)
        return self._stub

    async def close(self) -> None:
        channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            await channel.close(None)

    async def _metadata(self, method: str) -> list[tuple[str, str]]:
        headers = [("taskhub", self.hub), ("x-user-agent", _agent())]
        if self._bearer is not None:
            try:
                token = await self._bearer.token()
            except Exception as error:  # the credential's own failure: the service would refuse the call anyway
                raise EndpointError(
                    grpc.StatusCode.UNAUTHENTICATED, f"no access token for the scheduler: {error}", method
                ) from error
            headers.append(("authorization", f"Bearer {token}"))
        return headers

    async def _call(self, method: str, request: Any) -> Any:
        """One unary call with the hub's metadata and a deadline; failures come out as :class:`EndpointError`."""
        call = getattr(self._open(), method)
        return await self._invoke(method, lambda headers: call(request, metadata=headers, timeout=self._timeout))

    async def _invoke(self, method: str, run: Callable[[list[tuple[str, str]]], Awaitable[T]]) -> T:
        headers = await self._metadata(method)
        try:
            return await run(headers)
        except grpc.aio.AioRpcError as error:
            if isinstance(error, EndpointError):
                raise
            raise map_error(error, method) from None

    # ------------------------------------------------------------------------------------------- instances

    async def query_instances(
        self,
        *,
        statuses: Sequence[int] = (),
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        prefix: str | None = None,
        size: int,
        token: str | None = None,
    ) -> tuple[list[pb.OrchestrationState], str | None]:
        """One ``QueryInstances`` page (states without payloads) and the token of the next (``None``: no more)."""
        query = pb.InstanceQuery(
            runtimeStatus=[cast("pb.OrchestrationStatus", s) for s in statuses],
            createdTimeFrom=_at(created_from),
            createdTimeTo=_at(created_to),
            instanceIdPrefix=_text(prefix or None),
            maxInstanceCount=size,
            fetchInputsAndOutputs=False,
            continuationToken=_text(token),
        )
        response = await self._call("QueryInstances", pb.QueryInstancesRequest(query=query))
        return list(response.orchestrationState), next_token(response, token)

    async def get_instance(self, instance_id: str, *, payloads: bool = True) -> pb.OrchestrationState | None:
        """The instance's ``OrchestrationState``, or ``None`` when there is none."""
        request = pb.GetInstanceRequest(instanceId=instance_id, getInputsAndOutputs=payloads)
        response = await self._call("GetInstance", request)
        if not response.exists:
            return None
        state: pb.OrchestrationState = response.orchestrationState
        state.instanceId = instance_id  # the ID asked for, as every client reports it
        return state

    async def history(self, instance_id: str) -> list[pb.HistoryEvent]:
        """Every ``HistoryEvent`` of the instance, in order, from ``StreamInstanceHistory``."""
        stream = self._open().StreamInstanceHistory
        request = pb.StreamInstanceHistoryRequest(instanceId=instance_id)

        async def read(headers: list[tuple[str, str]]) -> list[pb.HistoryEvent]:
            events: list[pb.HistoryEvent] = []
            async for chunk in stream(request, metadata=headers, timeout=HISTORY_TIMEOUT):
                events.extend(chunk.events)
            return events

        return await self._invoke("StreamInstanceHistory", read)

    async def start_instance(
        self,
        name: str,
        *,
        instance_id: str | None = None,
        input: str | None = None,
        version: str | None = None,
        start_at: datetime | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        """Starts an orchestration (a random hex ID when none is given); returns its instance ID."""
        request = pb.CreateInstanceRequest(
            instanceId=instance_id or uuid.uuid4().hex,
            name=name,
            input=_text(input),
            version=_text(version),
            scheduledStartTimestamp=_at(start_at),
            tags=tags or {},
            requestTime=_now(),
        )
        return str((await self._call("StartInstance", request)).instanceId)

    async def raise_event(self, instance_id: str, name: str, data: str | None) -> None:
        await self._call("RaiseEvent", pb.RaiseEventRequest(instanceId=instance_id, name=name, input=_text(data)))

    async def terminate(self, instance_id: str, *, output: str | None, recursive: bool) -> None:
        request = pb.TerminateRequest(instanceId=instance_id, output=_text(output), recursive=recursive)
        await self._call("TerminateInstance", request)

    async def suspend(self, instance_id: str, reason: str | None) -> None:
        await self._call("SuspendInstance", pb.SuspendRequest(instanceId=instance_id, reason=_text(reason)))

    async def resume(self, instance_id: str, reason: str | None) -> None:
        await self._call("ResumeInstance", pb.ResumeRequest(instanceId=instance_id, reason=_text(reason)))

    async def rewind(self, instance_id: str, reason: str | None) -> None:
        await self._call("RewindInstance", pb.RewindInstanceRequest(instanceId=instance_id, reason=_text(reason)))

    async def restart(self, instance_id: str, *, new_instance_id: bool) -> str:
        """Restarts the instance; returns the restarted instance's ID (a new one if asked)."""
        request = pb.RestartInstanceRequest(instanceId=instance_id, restartWithNewInstanceId=new_instance_id)
        return str((await self._call("RestartInstance", request)).instanceId)

    async def purge(self, instance_id: str, *, recursive: bool) -> int:
        """Purges one finished instance (and its sub-orchestrations if ``recursive``); returns how many went."""
        request = pb.PurgeInstancesRequest(instanceId=instance_id, recursive=recursive, isOrchestration=True)
        return int((await self._call("PurgeInstances", request)).deletedInstanceCount)

    # -------------------------------------------------------------------------------------------- entities

    async def query_entities(
        self, *, prefix: str | None, include_state: bool, size: int, token: str | None = None
    ) -> tuple[list[pb.EntityMetadata], str | None]:
        """One ``QueryEntities`` page of ``EntityMetadata`` and the token of the next (``None``: no more)."""
        query = pb.EntityQuery(
            instanceIdStartsWith=_text(prefix or None),
            includeState=include_state,
            includeTransient=False,
            pageSize=Int32Value(value=size),
            continuationToken=_text(token),
        )
        response = await self._call("QueryEntities", pb.QueryEntitiesRequest(query=query))
        return list(response.entities), next_token(response, token)

    async def get_entity(self, entity_id: str, *, include_state: bool = True) -> pb.EntityMetadata | None:
        """The entity's ``EntityMetadata``, or ``None`` when there is none."""
        response = await self._call("GetEntity", pb.GetEntityRequest(instanceId=entity_id, includeState=include_state))
        entity: pb.EntityMetadata = response.entity
        return entity if response.exists else None

    async def signal_entity(self, entity_id: str, operation: str, input: str | None) -> None:
        request = pb.SignalEntityRequest(
            instanceId=entity_id,
            name=operation,
            input=_text(input),
            requestId=str(uuid.uuid4()),
            requestTime=_now(),
        )
        await self._call("SignalEntity", request)

    # ------------------------------------------------------------------------------------------ extensions

    async def worker_view(self) -> bytes | None:
        """The worker view's answer (``dtscale.WorkerView/GetWorkers``), or ``None`` when the endpoint lacks it."""
        self._open()
        assert self._channel is not None
        call = self._channel.unary_unary(
            f"/{WORKER_VIEW_SERVICE}/{WORKER_VIEW_METHOD}",
            request_serializer=_raw,
            response_deserializer=_raw,
        )
        try:
            found: bytes = await self._invoke(
                WORKER_VIEW_METHOD, lambda headers: call(b"", metadata=headers, timeout=self._timeout)
            )
        except EndpointError as error:
            if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise
        return found


def _raw(data: bytes) -> bytes:
    return data
