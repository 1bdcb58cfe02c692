"""The thread-centric protocol of langgraph-sdk 0.4 (``client.threads.stream``): commands and event streams.

- ``POST /threads/{thread_id}/commands``: one command in, its answer out (``run.start``, ``input.respond``,
  ``input.inject``, ``state.get``, ``state.listCheckpoints``, ``state.fork``, ``agent.getTree``). A command the
  protocol refuses is answered ``{"type": "error", "error": <code>, "message": ...}`` (HTTP 200, as the SDK reads
  it); a body that is not a command at all gets a 4xx.
- ``POST /threads/{thread_id}/stream/events``: the thread's events over SSE, filtered by ``{channels, namespaces,
  depth, since}``; ``GET`` on the same path upgrades to a WebSocket carrying commands and subscriptions.

Runs are the run service's runs (``services.py``), so everything here works from any server of the task hub.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import protocol_commands as pc
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import bad_request, json_body
from durabletask.extensions.langgraph._server.protocol_handlers import Commands
from durabletask.extensions.langgraph._server.protocol_stream import ThreadEvents, serve_sse, since_of
from durabletask.extensions.langgraph._server.protocol_ws import serve_websocket
from durabletask.extensions.langgraph._server.services import run_service, thread_service


async def _json(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object; 422 for anything else (a number over Python's digit limit included)."""
    try:
        return await json_body(request)
    except ValueError as error:
        raise bad_request(f"the request body is not valid JSON: {str(error)[:200]}") from None


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The protocol's routes: commands, and the event stream over SSE and WebSocket."""
    commands = Commands(ctx)

    def source() -> ThreadEvents:
        return ThreadEvents(run_service(ctx), thread_service(ctx))

    async def post_command(request: web.Request) -> web.Response:
        body = await _json(request)
        return web.json_response(await commands.answer(request.match_info["thread_id"], body))

    async def post_events(request: web.Request) -> web.StreamResponse:
        body = await _json(request)
        try:
            wanted = since_of(body, request.headers.get("Last-Event-ID"))
        except pc.ProtocolError as error:
            raise bad_request(error.message) from None
        thread_id = request.match_info["thread_id"]
        older = await source().older_runs(thread_id)
        return await serve_sse(request, source(), thread_id, wanted, older)

    async def get_events(request: web.Request) -> web.StreamResponse:
        thread_id = request.match_info["thread_id"]
        await source().older_runs(thread_id)  # a thread ID no thread can have is refused before the upgrade
        return await serve_websocket(request, ctx, commands, source(), thread_id)

    return [
        web.post("/threads/{thread_id}/commands", post_command),
        web.post("/threads/{thread_id}/stream/events", post_events),
        web.get("/threads/{thread_id}/stream/events", get_events),
    ]
