"""Container health probe: exits 0 when the emulator answers a gRPC Hello (``python -m emulator.healthcheck``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc
from google.protobuf import empty_pb2

from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from emulator.auth import TOKEN_ENV, read_token_file


def probe(
    address: str = "127.0.0.1:8080",
    timeout: float = 3.0,
    *,
    auth_token: str | None = None,
    tls_ca: bytes | None = None,
    tls: bool = False,
) -> bool:
    """True when the emulator at ``address`` answers Hello within ``timeout`` seconds.

    Args:
        address: ``host:port`` of the emulator.
        timeout: Seconds to wait for the answer.
        auth_token: Bearer token for an emulator started with ``--auth-token``.
        tls_ca: PEM roots trusted for a TLS emulator (implies ``tls``).
        tls: Connect over TLS with the system roots when ``tls_ca`` is not given.
    """
    metadata = [("authorization", f"Bearer {auth_token}")] if auth_token else None
    channel = (
        grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=tls_ca))
        if tls or tls_ca is not None
        else grpc.insecure_channel(address)
    )
    with channel:
        try:
            pb_grpc.TaskHubSidecarServiceStub(channel).Hello(empty_pb2.Empty(), timeout=timeout, metadata=metadata)
        except grpc.RpcError:
            return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator.healthcheck", description=probe.__doc__)
    parser.add_argument("address", nargs="?", default="127.0.0.1:8080")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--auth-token", default=os.environ.get(TOKEN_ENV), help=f"bearer token (env {TOKEN_ENV})")
    parser.add_argument("--auth-token-file", help="read the bearer token from this file")
    parser.add_argument("--tls", action="store_true", help="connect over TLS")
    parser.add_argument("--tls-ca", help="PEM file of the CA that signed the emulator's certificate")
    args = parser.parse_args(argv)
    token = read_token_file(args.auth_token_file) if args.auth_token_file else args.auth_token
    ca = Path(args.tls_ca).read_bytes() if args.tls_ca else None
    return 0 if probe(args.address, args.timeout, auth_token=token, tls_ca=ca, tls=args.tls) else 1


if __name__ == "__main__":
    sys.exit(main())
