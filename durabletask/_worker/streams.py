"""The worker's side of durable streams: the RPCs an activity's publisher sends and reads with, and the built-ins."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from durabletask._codec import Codec
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._streams import entity, wire
from durabletask._streams.producer import ActivityPublisher
from durabletask._worker.stream import ChannelProvider

_RPC_TIMEOUT = 10.0
_HEAD = entity.make_head_entity()


def stream_entities(max_bytes_per_instance: int) -> dict[str, Any]:
    """The stream entities by name, retaining ``max_bytes_per_instance`` per instance."""
    return {
        wire.HEAD_ENTITY: entity.make_head_entity(max_bytes_per_instance),
        wire.SEGMENT_ENTITY: entity.dtscale_streamsegment,
    }


def built_in_entity(name: str) -> Any | None:
    """The stream entities every worker hosts unless it registers its own under their names."""
    if name == wire.HEAD_ENTITY:
        return _HEAD
    if name == wire.SEGMENT_ENTITY:
        return entity.dtscale_streamsegment
    return None


class StreamTransport:
    """Public RPCs only: ``SignalEntity`` to append to a stream head, ``GetEntity`` to see what it stored."""

    def __init__(self, channels: ChannelProvider, logger: logging.Logger) -> None:
        self._channels = channels
        self._logger = logger

    def send(self, entity_id: str, encoded_batch: str) -> None:
        channel, release = self._channels.hold()
        try:
            request = pb.SignalEntityRequest(instanceId=entity_id, name=wire.APPEND, requestId=str(uuid.uuid4()))
            request.input.value = encoded_batch
            pb_grpc.TaskHubSidecarServiceStub(channel).SignalEntity(request, timeout=_RPC_TIMEOUT)
        finally:
            release()

    def read(self, entity_id: str) -> dict[str, Any] | None:
        channel, release = self._channels.hold()
        try:
            request = pb.GetEntityRequest(instanceId=entity_id, includeState=True)
            response = pb_grpc.TaskHubSidecarServiceStub(channel).GetEntity(request, timeout=_RPC_TIMEOUT)
        finally:
            release()
        if not response.exists or not response.entity.HasField("serializedState"):
            return None
        state: dict[str, Any] = json.loads(response.entity.serializedState.value)
        return state

    def publisher(self, request: pb.ActivityRequest, codec: Codec) -> ActivityPublisher:
        """A publisher for one activity attempt."""
        instance = request.orchestrationInstance
        return ActivityPublisher(
            instance.instanceId,
            instance.executionId.value,
            request.taskId,
            codec,
            self.send,
            self.read,
            logger=self._logger,
        )
