"""The RPC handlers of the emulator's service, with request decoding that never fails outside the servicer.

A request whose bytes are not the expected message reaches the servicer as :class:`Undecodable`, which it
answers with INVALID_ARGUMENT naming the message type (instead of gRPC's own UNKNOWN or INTERNAL).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError, Message

from dtscale_emulator.protocol import pb

SERVICE = pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"]


@dataclass(frozen=True)
class Undecodable:
    """The request of a call whose bytes did not parse as ``type_name``."""

    type_name: str
    problem: str


def _decoder(message_type: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    def decode(data: bytes) -> Message | Undecodable:
        try:
            return message_type.FromString(data)
        except DecodeError as error:
            return Undecodable(message_type.DESCRIPTOR.full_name, str(error) or "not a valid message")

    return decode


def service_handler(servicer: object) -> grpc.GenericRpcHandler[Any, Any]:
    """Every method ``servicer`` implements as a coroutine; the others are left to gRPC (UNIMPLEMENTED)."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in SERVICE.methods:
        behavior = getattr(servicer, method.name, None)
        if behavior is None or not inspect.iscoroutinefunction(behavior):
            continue
        request_type = message_factory.GetMessageClass(method.input_type)
        response_type = message_factory.GetMessageClass(method.output_type)
        make = grpc.unary_stream_rpc_method_handler if method.server_streaming else grpc.unary_unary_rpc_method_handler
        handlers[method.name] = make(
            behavior,
            request_deserializer=_decoder(request_type),
            response_serializer=response_type.SerializeToString,
        )
    return grpc.method_handlers_generic_handler(SERVICE.full_name, handlers)
