"""``durabletask dashboard``: serves the web dashboard for any DTS endpoint until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import IO


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dashboard", help="serve the web dashboard for this endpoint (needs the 'dashboard' extra)")
    p.add_argument("--host", default="127.0.0.1", help="interface to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8082, help="port to serve on; 0 picks one (default 8082)")
    p.add_argument("--task-hubs", help="comma-separated task hubs to show (default: --taskhub)")
    p.add_argument("--auth-token", help="require this token to open the dashboard (as ?token=, cookie or bearer)")
    p.add_argument("--tls-cert", help="PEM certificate (chain) file: serve the dashboard over HTTPS (with --tls-key)")
    p.add_argument("--tls-key", help="PEM private key file of --tls-cert")


async def _serve(args: argparse.Namespace, out: IO[str]) -> None:
    from dtscale_emulator.dashboard import server_tls, start
    from dtscale_emulator.dashboard.connect import connection_string_clients, endpoint_clients

    if args.connection_string:
        clients, default_hub = connection_string_clients(args.connection_string)
    else:
        clients, default_hub = endpoint_clients(args.endpoint, args.token), args.taskhub
    hubs = [h.strip() for h in (args.task_hubs or default_hub).split(",") if h.strip()]
    tls = server_tls(args.tls_cert, args.tls_key)
    dashboard = await start(clients, hubs, host=args.host, port=args.port, token=args.auth_token, tls=tls)
    out.write(f"Durable Task dashboard on {dashboard.url} for {', '.join(hubs)}\n")
    out.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await dashboard.close()


def cmd_dashboard(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from dtscale_emulator.dashboard import missing_server_message
    from dtscale_emulator.dashboard.connection_string import MissingAzureIdentityError

    problem = missing_server_message()
    if problem is not None:
        err.write(f"durabletask dashboard: {problem}\n")
        return 1
    if args.auth_token is not None and not args.auth_token.strip():
        err.write("durabletask dashboard: --auth-token must not be empty\n")
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args, out))
    except (OSError, ValueError, MissingAzureIdentityError) as error:
        err.write(f"durabletask dashboard: {error}\n")
        return 1
    return 0
