"""Command line entry point: ``durabletask-emulator`` / ``python -m emulator``."""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from dtscale_emulator.errors import EmulatorError
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.faults import FaultProfile
from dtscale_emulator.ops.stop_signal import StopSignal
from dtscale_emulator.ops.tracing.otlp import ENDPOINT_ENV, EXTRA
from dtscale_emulator.rpc.auth import TLS_CERT_ENV, TLS_KEY_ENV, TOKEN_ENV, TOKEN_FILE_ENV, read_token_file
from dtscale_emulator.server import DEFAULT_RESTART_GRACE, DEFAULT_STOP_GRACE, EmulatorServer


def _fault_profile(text: str) -> FaultProfile:
    try:
        return FaultProfile.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="durabletask-emulator", description="Local Durable Task Scheduler.")
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; 0.0.0.0 for all interfaces)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port to listen on; 0 picks one (default 8080)")
    parser.add_argument("--db", default="./durabletask-emulator.db", help="SQLite file for persistent state")
    parser.add_argument("--in-memory", action="store_true", help="keep all state in memory (lost on exit)")
    parser.add_argument("--task-hubs", default="default", help="comma-separated task hubs to create")
    parser.add_argument("--dynamic-task-hubs", action="store_true", help="create unknown task hubs on first use")
    parser.add_argument("--lease-timeout", type=float, default=300.0, help="seconds before redelivery")
    parser.add_argument("--health-ping-interval", type=float, default=15.0, help="seconds between idle pings")
    parser.add_argument(
        "--keepalive-interval",
        type=float,
        default=30.0,
        help="seconds between HTTP/2 pings on connections with open calls (default 30)",
    )
    parser.add_argument(
        "--keepalive-timeout",
        type=float,
        default=20.0,
        help="seconds a ping may go unanswered before the connection is closed and its work items are offered "
        "again (default 20)",
    )
    parser.add_argument(
        "--handshake-timeout",
        type=float,
        default=20.0,
        help="seconds a new connection has to complete its TLS and HTTP/2 handshake before it is closed (default 20)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds a connection with no call open stays open before the server closes it; clients reconnect on "
        "their next call (default 300)",
    )
    parser.add_argument(
        "--restart-grace",
        type=float,
        default=DEFAULT_RESTART_GRACE,
        help="seconds for which, after a crash, the activity leases of the previous process stay valid (each no "
        "longer than its own lease), so results still on their way count and those activities do not run again; "
        f"0 offers them again at once (default {DEFAULT_RESTART_GRACE:g})",
    )
    parser.add_argument(
        "--stop-grace",
        type=float,
        default=DEFAULT_STOP_GRACE,
        help="on SIGTERM or Ctrl-C, seconds to lease nothing more and take the results of work already handed out; "
        "leases still out then stay in the store as after a crash, for the next start's --restart-grace "
        f"(default {DEFAULT_STOP_GRACE:g})",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument(
        "--auth-token", help=f"require 'authorization: Bearer <token>' on every call (or set {TOKEN_ENV})"
    )
    auth.add_argument(
        "--auth-token-file",
        default=os.environ.get(TOKEN_FILE_ENV) or None,
        help=f"read the required bearer token from this file (or set {TOKEN_FILE_ENV})",
    )
    parser.add_argument(
        "--tls-cert",
        default=os.environ.get(TLS_CERT_ENV) or None,
        help=f"PEM certificate (chain) file; with --tls-key, serve TLS only (or set {TLS_CERT_ENV})",
    )
    parser.add_argument(
        "--tls-key", default=os.environ.get(TLS_KEY_ENV) or None, help=f"PEM private key file (or set {TLS_KEY_ENV})"
    )
    parser.add_argument(
        "--durability",
        choices=("full", "normal"),
        default="full",
        help="full (default): every change is synced to disk before the call is answered, so acknowledged work "
        "survives an OS crash or power loss; normal: faster, survives a crash of the emulator's process, but an OS "
        "crash or power loss may lose the changes since the last checkpoint",
    )
    parser.add_argument(
        "--skip-integrity-check",
        action="store_true",
        help="do not check every page of an existing --db with SQLite's quick_check at start (it reads the whole "
        "file; a damaged store is then found only when a call reads the damaged page)",
    )
    parser.add_argument(
        "--dashboard-port",
        type=int,
        default=8082,
        help="port of the web dashboard, on the same host; 0 picks one (default 8082; needs the 'dashboard' extra)",
    )
    parser.add_argument("--no-dashboard", action="store_true", help="do not serve the web dashboard")
    parser.add_argument(
        "--dashboard-insecure-http",
        action="store_true",
        help="with --tls-cert, serve the dashboard over plain HTTP anyway (by default it serves HTTPS with the same "
        "certificate and key)",
    )
    parser.add_argument(
        "--otlp-endpoint",
        default=os.environ.get(ENDPOINT_ENV) or None,
        help="export the emulator's own spans (each traced work item's queueing, dispatch and commit) to this "
        f"OTLP/gRPC collector, e.g. http://localhost:4317 (or set {ENDPOINT_ENV}; needs the '{EXTRA}' extra)",
    )
    parser.add_argument(
        "--time-skipping",
        action="store_true",
        help="for tests: whenever no work item is leased or ready, jump the clock to the next due timer "
        "(the clock then moves only by these jumps)",
    )
    parser.add_argument(
        "--faults",
        type=_fault_profile,
        help="inject faults for testing, e.g. 'cut_stream_every=5s,stall_every=20s,stall_for=3s,goaway_every=30s,"
        "delay_completions=50ms,reject_completion_every=25'",
    )
    return parser


def _token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    if args.auth_token is not None and not args.auth_token.strip():
        parser.error("--auth-token must not be empty")
    if args.auth_token is None and args.auth_token_file:  # an explicit --auth-token beats the file's variable
        try:
            return read_token_file(args.auth_token_file)
        except (OSError, ValueError) as error:
            parser.error(f"--auth-token-file: {error}")
    token = args.auth_token if args.auth_token is not None else os.environ.get(TOKEN_ENV)
    return token.strip() if token and token.strip() else None


def _check_durations(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    for flag in ("keepalive_interval", "keepalive_timeout", "handshake_timeout", "idle_timeout"):
        if not 0.001 <= getattr(args, flag) <= 86_400:
            parser.error(f"--{flag.replace('_', '-')} must be between 0.001 and 86400 seconds")
    for flag in ("restart_grace", "stop_grace"):
        if not 0 <= getattr(args, flag) <= 86_400:
            parser.error(f"--{flag.replace('_', '-')} must be between 0 and 86400 seconds")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key must be given together")
    if args.dashboard_insecure_http and args.tls_cert is None:
        parser.error("--dashboard-insecure-http applies only with --tls-cert (without it the dashboard is plain HTTP)")
    for flag in ("tls_cert", "tls_key"):
        path = getattr(args, flag)
        if path is not None and not os.access(path, os.R_OK):
            parser.error(f"--{flag.replace('_', '-')}: cannot read {path!r} (a PEM file is required)")
    _check_durations(args, parser)
    token = _token(args, parser)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    hubs = tuple(h.strip() for h in args.task_hubs.split(",") if h.strip())
    try:
        server = _server(args, hubs, token)
    except EmulatorError as error:  # the store is in use or unusable, or the OTLP extra is missing
        print(f"durabletask-emulator: {error}", file=sys.stderr, flush=True)
        return 1
    except sqlite3.Error as error:  # the first writes to a store whose check was skipped
        print(f"durabletask-emulator: cannot use {args.db} as the store: {error}", file=sys.stderr, flush=True)
        return 1
    # Handlers go in before the address is printed, so a supervisor that reacts to it can stop us cleanly.
    with StopSignal() as stop:
        server.start()
        print(f"Durable Task emulator listening on {server.address}", flush=True)
        if server.time_skipper is not None:
            print(f"time skipping: on, the clock starts at {server.clock.now().isoformat()}", flush=True)
        dashboard = None if args.no_dashboard else _start_dashboard(args, server, hubs, token)
        stop.wait()
    if dashboard is not None:
        aio_loop.run(dashboard.close())
    server.shutdown(grace=args.stop_grace)
    return 0


def _start_dashboard(args: argparse.Namespace, server: EmulatorServer, hubs: tuple[str, ...], token: str | None) -> Any:
    """Serves the web dashboard on the emulator's loop, through a client of the emulator's own gRPC port.

    The dashboard reaches the emulator as it reaches any endpoint, through the public protocol (and the worker
    view); the server itself never imports it.
    """
    from dtscale_emulator.dashboard import missing_server_message, server_tls, start
    from dtscale_emulator.dashboard.connect import endpoint_clients

    problem = missing_server_message()
    if problem is not None:
        print(f"durabletask-emulator: no dashboard: {problem} (or pass --no-dashboard)", file=sys.stderr, flush=True)
        return None
    target = f"{_reachable(server.host)}:{server.port}"
    certificate = None
    if args.tls_cert is not None:
        with open(args.tls_cert, "rb") as f:
            certificate = f.read()
        target = f"grpcs://{target}"
    clients = endpoint_clients(target, token, root_certificates=certificate)
    try:
        tls = None if args.dashboard_insecure_http else server_tls(args.tls_cert, args.tls_key)
        serving = start(clients, hubs, host=server.host, port=args.dashboard_port, token=token, tls=tls)
        dashboard = aio_loop.run(serving)
    except OSError as error:
        print(f"durabletask-emulator: no dashboard: {error}", file=sys.stderr, flush=True)
        return None
    print(f"Durable Task dashboard on {dashboard.url}", flush=True)
    return dashboard


def _reachable(host: str) -> str:
    """The address a client in this process dials to reach a server bound to ``host``."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "[::1]"}.get(host, host)


def _server(args: argparse.Namespace, hubs: tuple[str, ...], token: str | None) -> EmulatorServer:
    return EmulatorServer(
        host=args.host,
        port=args.port,
        db_path=None if args.in_memory else args.db,
        in_memory=args.in_memory,
        task_hubs=hubs,
        dynamic_task_hubs=args.dynamic_task_hubs,
        lease_timeout=args.lease_timeout,
        health_ping_interval=args.health_ping_interval,
        auth_token=token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        faults=args.faults,
        durability=args.durability,
        otlp_endpoint=args.otlp_endpoint,
        keepalive_interval=args.keepalive_interval,
        keepalive_timeout=args.keepalive_timeout,
        handshake_timeout=args.handshake_timeout,
        idle_timeout=args.idle_timeout,
        time_skipping=args.time_skipping,
        integrity_check=not args.skip_integrity_check,
        restart_grace=args.restart_grace,
    )


if __name__ == "__main__":
    sys.exit(main())
