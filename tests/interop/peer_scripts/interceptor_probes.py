"""The interceptor classes of either SDK, used as applications use them; prints one JSON line.

Usage: ``python interceptor_probes.py resiliency DEAD_ADDRESS LIVE_ADDRESS SILENT_ADDRESS`` (nothing listens at the
first; the last accepts connections and never answers, so a call's deadline always passes there) or
``python interceptor_probes.py metadata LIVE_ADDRESS``, or ``python interceptor_probes.py worker LIVE_ADDRESS``
(which starts a worker and stops it when a line arrives on stdin). ``metadata`` sends calls whose headers the recording
server at ``LIVE_ADDRESS`` keeps; each call carries a ``probe`` header naming the case, so the test can tell
them apart. Only public names of both packages are used (``durabletask.client``, ``durabletask.worker``,
``durabletask.azuremanaged.client``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import grpc
import grpc.aio

from durabletask.client import (
    AsyncClientResiliencyInterceptor,
    ClientResiliencyInterceptor,
    FailureTracker,
    TaskHubGrpcClient,
)

GET_INSTANCE = "/TaskHubSidecarService/GetInstance"
WAIT = "/TaskHubSidecarService/WaitForInstanceCompletion"


def _sync_steps(dead: str, live: str, silent: str) -> list[Any]:
    tracker = FailureTracker(threshold=2)
    recreated: list[int] = []
    interceptor = ClientResiliencyInterceptor(tracker, lambda: recreated.append(1))
    steps: list[Any] = []

    def call(address: str, method: str, timeout: float = 5) -> None:
        channel = grpc.intercept_channel(grpc.insecure_channel(address), interceptor)
        try:
            channel.unary_unary(method)(b"", timeout=timeout)
            outcome = "OK"
        except grpc.RpcError as error:
            outcome = error.code().name
        finally:
            channel.close()
        steps.append([method.rsplit("/", 1)[-1], outcome, tracker.consecutive_failures, len(recreated)])

    call(dead, GET_INSTANCE)
    call(dead, GET_INSTANCE)
    call(dead, GET_INSTANCE)
    call(live, GET_INSTANCE)
    call(silent, GET_INSTANCE, timeout=0.5)  # a deadline on an ordinary call is a transport failure
    call(silent, WAIT, timeout=0.5)  # on a long poll it is the caller's own timeout
    call(dead, GET_INSTANCE)
    return steps


async def _async_client(dead: str) -> bool:
    from durabletask.client import AsyncTaskHubGrpcClient

    tracker = FailureTracker(threshold=1)
    recreated: list[int] = []
    client = AsyncTaskHubGrpcClient(
        host_address=dead, interceptors=[AsyncClientResiliencyInterceptor(tracker, lambda: recreated.append(1))]
    )
    try:
        await client.get_orchestration_state("x")
    except Exception:  # unreachable: both SDKs raise
        pass
    finally:
        await client.close()
    return len(recreated) > 0


async def _async_steps(dead: str, live: str) -> list[Any]:
    tracker = FailureTracker(threshold=2)
    recreated: list[int] = []
    interceptor = AsyncClientResiliencyInterceptor(tracker, lambda: recreated.append(1))
    steps: list[Any] = []

    async def call(address: str, method: str, timeout: float = 5) -> None:
        channel = grpc.aio.insecure_channel(address, interceptors=[interceptor])
        try:
            await channel.unary_unary(method)(b"", timeout=timeout)
            outcome = "OK"
        except grpc.RpcError as error:
            outcome = error.code().name
        finally:
            await channel.close()
        steps.append([method.rsplit("/", 1)[-1], outcome, tracker.consecutive_failures, len(recreated)])

    for address, method in ((dead, GET_INSTANCE), (dead, GET_INSTANCE), (dead, GET_INSTANCE), (live, GET_INSTANCE)):
        await call(address, method)
    return steps


def _through_a_client(dead: str) -> Any:
    """The interceptor given to the SDK's client with ``interceptors=``: does it see the client's calls?"""
    tracker = FailureTracker(threshold=1)
    recreated: list[int] = []
    client = TaskHubGrpcClient(
        host_address=dead, interceptors=[ClientResiliencyInterceptor(tracker, lambda: recreated.append(1))]
    )
    try:
        client.get_orchestration_state("x")
    except Exception:  # both SDKs raise for an unreachable backend; which error is not the point here
        pass
    finally:
        client.close()
    return {"saw_failures": len(recreated) > 0}


def probe_resiliency(dead: str, live: str, silent: str) -> Any:
    tracker = FailureTracker(threshold=0)
    never = tracker.record_failure()
    three = FailureTracker(threshold=3)
    counts = [three.record_failure() for _ in range(4)]
    three.record_success()
    return {
        "tracker": {
            "disabled": [never, tracker.consecutive_failures],
            "counts": counts,
            "after_success": three.consecutive_failures,
            "repr": repr(three),
        },
        "sync": _sync_steps(dead, live, silent),
        "async": asyncio.run(_async_steps(dead, live)),
        "client": _through_a_client(dead),
        "async_client": asyncio.run(_async_client(dead)),
    }


def probe_worker(live: str) -> Any:
    from durabletask.worker import DefaultClientInterceptorImpl, TaskHubGrpcWorker

    class Team(DefaultClientInterceptorImpl):
        def __init__(self) -> None:
            super().__init__([("probe", "worker"), ("x-team", "ops")])

    worker = TaskHubGrpcWorker(host_address=live, interceptors=[Team()], metadata=[("x-meta", "1")])
    worker.start()
    sys.stdin.readline()  # the test writes a line once the worker's calls have reached the server
    worker.stop()
    return {"stopped": True}


def probe_metadata(live: str) -> Any:
    from durabletask.worker import DefaultClientInterceptorImpl

    class Team(DefaultClientInterceptorImpl):
        """Adds a fixed header, as an application's subclass does."""

        def __init__(self) -> None:
            super().__init__([("probe", "subclass"), ("x-team", "ops")])

    class PerCall(DefaultClientInterceptorImpl):
        """Computes a header per call by overriding ``_intercept_call`` and updating ``_metadata``."""

        def __init__(self) -> None:
            super().__init__([("probe", "per-call")])
            self.count = 0

        def _intercept_call(self, client_call_details: Any) -> Any:
            self.count += 1
            self._metadata = [("probe", "per-call"), ("x-call", str(self.count))]
            return super()._intercept_call(client_call_details)

    out: dict[str, Any] = {}
    for interceptor in (Team(), PerCall()):
        client = TaskHubGrpcClient(host_address=live, interceptors=[interceptor])
        client.get_orchestration_state("a")
        client.get_orchestration_state("b")
        client.close()
    shared = [("probe", "mutated-list")]
    plain = DefaultClientInterceptorImpl(shared)
    shared.append(("x-late", "1"))  # the interceptor keeps the list it was given
    channel = grpc.intercept_channel(grpc.insecure_channel(live), plain)
    channel.unary_unary(GET_INSTANCE)(b"", timeout=5)
    channel.close()
    none = DefaultClientInterceptorImpl(None)  # type: ignore[arg-type]
    channel = grpc.intercept_channel(grpc.insecure_channel(live), none)
    channel.unary_unary(GET_INSTANCE)(b"", timeout=5, metadata=[("probe", "none")])
    channel.close()
    out["isinstance"] = [isinstance(Team(), kind) for kind in (
        grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
        grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor)]  # fmt: skip
    out["dts"] = _dts(live)
    return out


def _dts(live: str) -> Any:
    from durabletask.azuremanaged.client import DTSAsyncDefaultClientInterceptorImpl, DTSDefaultClientInterceptorImpl
    from durabletask.worker import DefaultClientInterceptorImpl

    class Credential:
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            from azure.core.credentials import AccessToken

            return AccessToken("probe-token", int(time.time()) + 3600)

    interceptor = DTSDefaultClientInterceptorImpl(Credential(), "hub-x", "worker-1")
    client = TaskHubGrpcClient(host_address=live, interceptors=[interceptor], metadata=[("probe", "dts")])
    client.get_orchestration_state("a")
    client.close()
    found: dict[str, Any] = {"is_default": isinstance(interceptor, DefaultClientInterceptorImpl)}
    try:
        DTSDefaultClientInterceptorImpl(None, "")
        found["empty_taskhub"] = "accepted"
    except Exception as error:
        found["empty_taskhub"] = type(error).__name__
    found["async_kinds"] = [isinstance(DTSAsyncDefaultClientInterceptorImpl(None, "h"), kind) for kind in (
        grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor)]  # fmt: skip
    return found


if __name__ == "__main__":
    name, *args = sys.argv[1:]
    probes = {"resiliency": probe_resiliency, "metadata": probe_metadata, "worker": probe_worker}
    print(json.dumps(probes[name](*args)))
