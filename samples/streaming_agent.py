"""A durable agent whose model streams its answer token by token, served to a browser as server-sent events.

The "model" is scripted, so the sample runs anywhere: an activity publishes each token with ``ctx.publish`` while
it runs, and the orchestrator publishes its progress. A small aiohttp app serves ``GET /agents/{id}/events`` with
``durabletask.streams.sse``: each frame's ``id:`` is the item's cursor. The client here reads a few tokens,
drops the connection, and reconnects with ``Last-Event-ID``, as a browser's ``EventSource`` does; it gets exactly
the rest of the answer, nothing twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from _support import Runtime, parse_args

from durabletask import client, streams, task

SCRIPTED_ANSWER = "Durable streams keep every token, so a client that reconnects misses nothing."


def stream_answer(ctx: task.ActivityContext, question: str) -> str:
    """The scripted model: one token every 20 ms, each published as it is produced."""
    tokens = [word + " " for word in SCRIPTED_ANSWER.split(" ")]
    for token in tokens:
        ctx.publish({"token": token}, topic="tokens")
        time.sleep(0.02)
    return "".join(tokens).strip()


def agent(ctx: task.OrchestrationContext, question: str) -> Any:
    ctx.publish({"step": "thinking", "question": question}, topic="status")
    answer = yield ctx.call_activity(stream_answer, input=question)
    ctx.publish({"step": "answered"}, topic="status")
    return answer


def make_app(reader: client.AsyncTaskHubGrpcClient) -> Any:
    from aiohttp import web

    async def events(request: web.Request) -> web.StreamResponse:
        try:
            frames = streams.sse(
                reader, request.match_info["instance_id"], last_event_id=request.headers.get("Last-Event-ID")
            )
        except streams.StreamCursorError as error:
            raise web.HTTPBadRequest(text=str(error)) from error
        response = web.StreamResponse(headers=streams.SSE_HEADERS)
        await response.prepare(request)
        try:
            async with contextlib.aclosing(frames):  # a client that goes away ends the subscription at once
                async for frame in frames:
                    await response.write(frame)
        except ConnectionResetError:
            print("[web] the client went away; it resumes from its Last-Event-ID")
        return response

    app = web.Application()
    app.router.add_get("/agents/{instance_id}/events", events)
    return app


async def read_events(url: str, last_event_id: str | None, stop_after_tokens: int | None) -> list[dict[str, Any]]:
    """Read frames like an EventSource would; with ``stop_after_tokens``, drop the connection early."""
    import aiohttp

    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    frames: list[dict[str, Any]] = []
    tokens = 0
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        fields: dict[str, str] = {}
        async for raw in response.content:
            line = raw.decode("utf-8").rstrip("\n")
            if line:
                if not line.startswith(":"):
                    name, _, value = line.partition(": ")
                    fields[name] = value
                continue
            if not fields:
                continue
            frames.append({"id": fields.get("id"), "event": fields["event"], "data": json.loads(fields["data"])})
            fields = {}
            if fields_are_token(frames[-1]):
                tokens += 1
            if stop_after_tokens is not None and tokens >= stop_after_tokens:
                break  # the connection drops here
    return frames


def fields_are_token(frame: dict[str, Any]) -> bool:
    return frame["event"] == "tokens"


async def serve_and_read(rt: Runtime, instance_id: str) -> list[dict[str, Any]]:
    from aiohttp import web

    assert rt.address is not None or rt.connection_string
    reader = (
        client.AsyncTaskHubGrpcClient(host_address=rt.address)
        if not rt.connection_string
        else _managed_async_client(rt.connection_string)
    )
    runner = web.AppRunner(make_app(reader))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/agents/{instance_id}/events"
    print(f"[web] serving {url}")
    try:
        first = await read_events(url, None, stop_after_tokens=4)
        last_id = first[-1]["id"]
        print(f"first connection: {sum(fields_are_token(f) for f in first)} tokens, then the connection dropped")
        print(f"reconnecting with Last-Event-ID: {last_id}")
        rest = await read_events(url, last_id, None)
    finally:
        await runner.cleanup()
        await reader.close()
    return first + rest


def _managed_async_client(connection_string: str) -> client.AsyncTaskHubGrpcClient:
    from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient

    return AsyncDurableTaskSchedulerClient.from_connection_string(connection_string)


def main() -> None:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt:
        w = rt.worker()
        w.add_orchestrator(agent)
        w.add_activity(stream_answer)
        w.start()
        try:
            c = rt.client()
            instance_id = c.schedule_new_orchestration(agent, input="Why durable streams?", instance_id="agent-stream")
            frames = asyncio.run(serve_and_read(rt, instance_id))
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        finally:
            w.stop()
    assert state is not None
    ids = [f["id"] for f in frames if f["id"]]
    text = "".join(f["data"]["data"]["token"] for f in frames if fields_are_token(f)).strip()
    print(f"statuses: {[f['data']['data']['step'] for f in frames if f['event'] == 'status']}")
    print(f"ended with: {frames[-1]['event']}")
    print(f"reassembled answer: {text}")
    print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
    assert len(ids) == len(set(ids)) and ids == sorted(ids), "an item arrived twice or out of order"
    assert text == json.loads(state.serialized_output or '""'), "the stream does not match the answer"
    print("every token arrived exactly once across the reconnection")


if __name__ == "__main__":
    main()
