"""Container health probe: exits 0 when the emulator answers a gRPC Hello (``python -m emulator.healthcheck``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc

from dtscale_emulator.protocol import Empty, pb_grpc
from dtscale_emulator.rpc.auth import TLS_CERT_ENV, TOKEN_ENV, TOKEN_FILE_ENV, read_token_file

#: PEM roots the probe trusts; without it the probe trusts the served certificate (chain) itself.
TLS_CA_ENV = "DTS_EMULATOR_TLS_CA"
#: The name the probe expects in the certificate when it does not cover the probed address.
TLS_SERVER_NAME_ENV = "DTS_EMULATOR_TLS_SERVER_NAME"


def probe(
    address: str = "127.0.0.1:8080",
    timeout: float = 3.0,
    *,
    auth_token: str | None = None,
    tls_ca: bytes | None = None,
    tls: bool = False,
    server_name: str | None = None,
) -> bool:
    """True when the emulator at ``address`` answers Hello within ``timeout`` seconds.

    Args:
        address: ``host:port`` of the emulator.
        timeout: Seconds to wait for the answer.
        auth_token: Bearer token for an emulator started with ``--auth-token``.
        tls_ca: PEM roots trusted for a TLS emulator (implies ``tls``).
        tls: Connect over TLS with the system roots when ``tls_ca`` is not given.
        server_name: Name to check the certificate against instead of the host in ``address``.
    """
    metadata = [("authorization", f"Bearer {auth_token}")] if auth_token else None
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else None
    channel = (
        grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=tls_ca), options=options)
        if tls or tls_ca is not None
        else grpc.insecure_channel(address)
    )
    with channel:
        try:
            pb_grpc.TaskHubSidecarServiceStub(channel).Hello(Empty(), timeout=timeout, metadata=metadata)
        except grpc.RpcError:
            return False
    return True


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog="python -m emulator.healthcheck",
        description="Exits 0 when the emulator answers Hello. Every option defaults to the environment variable "
        "the emulator itself reads, so the container's health check follows its token and TLS settings.",
    )
    parser.add_argument("address", nargs="?", default="127.0.0.1:8080")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--auth-token", default=env(TOKEN_ENV), help=f"bearer token (env {TOKEN_ENV})")
    parser.add_argument(
        "--auth-token-file",
        default=env(TOKEN_FILE_ENV),
        help=f"read the bearer token from this file (env {TOKEN_FILE_ENV})",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        default=bool(env(TLS_CERT_ENV)),
        help=f"connect over TLS (on when {TLS_CERT_ENV} is set)",
    )
    parser.add_argument(
        "--tls-ca",
        default=env(TLS_CA_ENV) or env(TLS_CERT_ENV),
        help=f"PEM roots to trust (env {TLS_CA_ENV}; default: the served certificate, env {TLS_CERT_ENV})",
    )
    parser.add_argument(
        "--tls-server-name",
        default=env(TLS_SERVER_NAME_ENV),
        help=f"name the certificate must carry (env {TLS_SERVER_NAME_ENV})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    token = read_token_file(args.auth_token_file) if args.auth_token_file else args.auth_token
    ca = Path(args.tls_ca).read_bytes() if args.tls_ca else None
    healthy = probe(
        args.address, args.timeout, auth_token=token, tls_ca=ca, tls=args.tls, server_name=args.tls_server_name
    )
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
