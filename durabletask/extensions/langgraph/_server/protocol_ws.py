"""The protocol over a WebSocket: every frame in is a command, frames out are answers and subscribed events.

``subscription.subscribe`` starts a subscription (its events follow on the same socket), ``subscription.unsubscribe``
ends one, ``subscription.reconnect`` restarts the named ones after an event ID; any other command is answered as over
HTTP. Subscriptions live as long as the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiohttp import WSMsgType, web

from durabletask.extensions.langgraph._server import protocol_commands as pc
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.protocol_handlers import Commands
from durabletask.extensions.langgraph._server.protocol_stream import ThreadEvents, error_event
from durabletask.extensions.langgraph._server.sse import HEARTBEAT

_log = logging.getLogger("durabletask.langgraph.server.protocol")
#: Subscriptions one socket may hold at once.
MAX_SUBSCRIPTIONS = 64


class _Socket:
    """One socket's subscriptions and the lock that keeps its frames whole."""

    def __init__(self, ws: web.WebSocketResponse, commands: Commands, source: ThreadEvents, thread_id: str) -> None:
        self.ws = ws
        self.commands = commands
        self.source = source
        self.thread_id = thread_id
        self.lock = asyncio.Lock()
        self.subscriptions: dict[str, tuple[pc.Filter, asyncio.Task[None]]] = {}
        self.counter = 0

    async def send(self, message: Any) -> None:
        async with self.lock:
            await self.ws.send_str(json.dumps(message, separators=(",", ":"), default=str))

    async def _pump(self, wanted: pc.Filter, older: frozenset[str] | None) -> None:
        try:
            async for event in self.source.events(self.thread_id, wanted, older):
                await self.send(event)
        except ConnectionError:
            pass
        except Exception as error:
            _log.exception("reading a thread's events failed")
            with contextlib.suppress(Exception):
                await self.send(error_event(f"reading the thread's events failed: {type(error).__name__}"))

    async def start(self, wanted: pc.Filter, name: str | None = None) -> str:
        if name is None:
            if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
                raise pc.ProtocolError(
                    "invalid_argument", f"params: at most {MAX_SUBSCRIPTIONS} subscriptions per socket"
                )
            self.counter += 1
            name = f"sub-{self.counter}"
        older = None if wanted.since is not None else await self.source.older_runs(self.thread_id)
        self.subscriptions[name] = (wanted, asyncio.create_task(self._pump(wanted, older)))
        return name

    async def stop(self, name: str) -> pc.Filter:
        found = self.subscriptions.pop(name, None)
        if found is None:
            known = ", ".join(self.subscriptions) or "none"
            raise pc.ProtocolError("no_such_subscription", f"params.subscription_id: {name!r} is unknown ({known})")
        wanted, task = found
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        return wanted

    async def close(self) -> None:
        for name in list(self.subscriptions):
            await self.stop(name)

    async def answer(self, body: Any) -> dict[str, Any]:
        command_id = pc.command_id_of(body)
        try:
            command = pc.parse_command(body)
            if not command.method.startswith("subscription."):
                return await self.commands.answer(self.thread_id, body)
            request = pc.parse_params(command)
            result = await self._subscription(command.method, request)
        except Exception as error:
            return pc.failure(command_id, pc.refusal(error, self.thread_id))
        return pc.success(command_id, result)

    async def _subscription(self, method: str, request: Any) -> dict[str, Any]:
        if method == "subscription.subscribe":
            return {"subscription_id": await self.start(request)}
        if method == "subscription.unsubscribe":
            await self.stop(request.subscription_id)
            return {}
        await self.commands.run_of(self.thread_id, request.run_id)
        names = list(request.subscriptions) if request.subscriptions is not None else list(self.subscriptions)
        since = _seq(request.last_event_id)
        restored = True
        for name in names:
            if name not in self.subscriptions:
                restored = False
                continue
            old = await self.stop(name)
            await self.start(pc.Filter(old.channels, old.namespaces, old.depth, since), name)
        return {"restored": restored}


def _seq(last_event_id: str | None) -> int | None:
    if last_event_id is None:
        return None
    if not last_event_id.isdigit() or len(last_event_id) > 16:
        raise pc.ProtocolError(
            "invalid_argument", f"params.last_event_id: expected an event's seq (digits), got {last_event_id[:40]!r}"
        )
    return int(last_event_id)


def _decode(data: str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise pc.ProtocolError("invalid_argument", "frame: the command nests JSON too deeply") from None
    except ValueError as error:  # not JSON, or a number over Python's digit limit
        raise pc.ProtocolError("invalid_argument", f"frame: not a JSON command ({str(error)[:200]})") from None


async def serve_websocket(
    request: web.Request, ctx: ServerContext, commands: Commands, source: ThreadEvents, thread_id: str
) -> web.WebSocketResponse:
    """Serves one socket until either side closes it."""
    limit = int(getattr(ctx.settings, "max_body_bytes", 4 * 1024 * 1024))
    ws = web.WebSocketResponse(heartbeat=HEARTBEAT, max_msg_size=limit)
    await ws.prepare(request)
    socket = _Socket(ws, commands, source, thread_id)
    try:
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                try:
                    answer = await socket.answer(_decode(message.data))
                except pc.ProtocolError as error:
                    answer = pc.failure(None, error)
            elif message.type == WSMsgType.BINARY:
                answer = pc.failure(None, pc.ProtocolError("invalid_argument", "frame: commands are JSON text frames"))
            else:
                break
            await socket.send(answer)
    finally:
        await socket.close()
    return ws
