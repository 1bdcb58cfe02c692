"""The purge operation both clients run, driven against scripted answers: which streams it removes, and when."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from durabletask._client import requests as rq
from durabletask._client import streams as stream_ops
from durabletask._grpc.errors import RpcStatusError, UnimplementedError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._streams import wire
from durabletask.serialization import JsonDataConverter


def _drive(operation: Any, answer: Callable[[rq.RpcRequest], Any]) -> tuple[Any, list[rq.RpcRequest]]:
    made: list[rq.RpcRequest] = []
    reply: Any = None
    error: RpcStatusError | None = None
    while True:
        try:
            request = operation.send(reply) if error is None else operation.throw(error)
        except StopIteration as done:
            return done.value, made
        made.append(request)
        reply, error = None, None
        try:
            reply = answer(request)
        except RpcStatusError as raised:
            error = raised


def _backend(gone: set[str], streams: set[str], history: bool = True) -> Callable[[rq.RpcRequest], Any]:
    def answer(request: rq.RpcRequest) -> Any:
        message: Any = request.request
        if request.method == "StreamInstanceHistory":
            if not history:
                raise UnimplementedError("no such call", code=grpc.StatusCode.UNIMPLEMENTED, method=request.method)
            return []
        if request.method == "PurgeInstances":
            return pb.PurgeInstancesResponse(deletedInstanceCount=len(gone))
        if request.method == "GetInstance":
            return pb.GetInstanceResponse(exists=message.instanceId not in gone)
        if request.method == "GetEntity":
            if message.instanceId not in streams:
                return pb.GetEntityResponse(exists=False)
            return pb.GetEntityResponse(exists=True, entity=pb.EntityMetadata(instanceId=message.instanceId))
        if request.method == "SignalEntity":
            return pb.SignalEntityResponse()
        if request.method == "QueryEntities":  # the purged instances' activity control entities: none here
            return pb.QueryEntitiesResponse()
        raise AssertionError(f"unexpected call {request.method}")

    return answer


def _purged_streams(made: list[rq.RpcRequest]) -> list[str]:
    return [
        r.request.instanceId  # type: ignore[attr-defined]
        for r in made
        if r.method == "SignalEntity" and r.request.name == wire.PURGE  # type: ignore[attr-defined]
    ]


def test_a_purge_of_one_instance_removes_its_stream_without_looking_it_up() -> None:
    request = rq.build_purge_orchestration_request("a", False)
    head = str(wire.head_entity("a"))
    (result, owners), made = _drive(
        stream_ops.purge(request, JsonDataConverter(), payloads=False), _backend({"a"}, {head})
    )
    assert result.deleted_instance_count == 1 and owners == []
    assert [r.method for r in made] == ["PurgeInstances", "GetEntity", "SignalEntity", "QueryEntities"]
    assert _purged_streams(made) == [head]


def test_a_purge_that_removed_nothing_removes_no_stream() -> None:
    request = rq.build_purge_orchestration_request("a", False)
    (result, _), made = _drive(
        stream_ops.purge(request, JsonDataConverter(), payloads=False), _backend(set(), {str(wire.head_entity("a"))})
    )
    assert result.deleted_instance_count == 0
    assert [r.method for r in made] == ["PurgeInstances"]


def test_without_history_streaming_a_recursive_purge_still_purges_and_removes_the_named_stream() -> None:
    request = rq.build_purge_orchestration_request("a", True)
    head = str(wire.head_entity("a"))
    (result, _), made = _drive(
        stream_ops.purge(request, JsonDataConverter(), payloads=False), _backend({"a"}, {head}, history=False)
    )
    assert result.deleted_instance_count == 1
    assert _purged_streams(made) == [head]


def test_a_backend_without_entities_is_asked_once() -> None:
    request = rq.build_purge_orchestrations_by_request(None, None, None, False, None)

    def answer(r: rq.RpcRequest) -> Any:
        if r.method == "QueryInstances":
            page = [pb.OrchestrationState(instanceId=i) for i in ("a", "b", "c")]
            return pb.QueryInstancesResponse(orchestrationState=page)
        if r.method == "GetEntity":
            raise UnimplementedError("no entities", code=grpc.StatusCode.UNIMPLEMENTED, method=r.method)
        return _backend({"a", "b", "c"}, set())(r)

    (result, _), made = _drive(stream_ops.purge(request, JsonDataConverter(), payloads=False), answer)
    assert result.deleted_instance_count == 3
    assert [r.method for r in made].count("GetEntity") == 1
    assert _purged_streams(made) == []
