"""Interrupts through langgraph-sdk's ``threads.stream``: ``thread.values`` until ``thread.interrupted``, then
``thread.run.respond``, over SSE and WebSocket, with the async and the sync client; and RemoteGraph's v3 stream
resuming a thread in a new session."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_client, get_sync_client

from tests.langgraph_server.support_protocol import Servers, servers
from tests.langgraph_server.support_protocol_graphs import ANSWER

__all__ = ["servers"]

pytestmark = pytest.mark.timeout(300)

INPUT: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}


async def _until_interrupted(thread: Any) -> list[dict[str, Any]]:
    snapshots = []
    async for snap in thread.values:
        snapshots.append(snap)
        if thread.interrupted:
            break
    return snapshots


@pytest.mark.parametrize("transport", ["sse", "websocket"])
async def test_a_run_streams_interrupts_and_resumes(servers: Servers, transport: str) -> None:
    async with (
        get_client(url=servers.url) as client,
        client.threads.stream(assistant_id="chat", transport=transport) as thread,  # type: ignore[arg-type]
    ):
        started = await thread.run.start(input=INPUT)
        assert started["run_id"]
        snapshots = await _until_interrupted(thread)
        assert thread.interrupted
        assert [i["value"] for i in thread.interrupts] == [{"question": "approve?"}]
        assert snapshots and snapshots[-1]["steps"] == ["talk"]
        await thread.run.respond("yes")
        final = await thread.output
    assert final["answer"] == "yes" and final["steps"] == ["talk", "ask"]
    assert final["messages"][-1]["content"] == ANSWER


def test_the_sync_client_runs_the_same_protocol(servers: Servers) -> None:
    with get_sync_client(url=servers.url) as client, client.threads.stream(assistant_id="chat") as thread:
        thread.run.start(input=INPUT)
        for _ in thread.values:
            if thread.interrupted:
                break
        assert thread.interrupted
        thread.run.respond("no")
        final = thread.output
    assert final["answer"] == "no"


async def test_remote_graph_v3_interrupts_and_resumes_the_same_thread_in_a_new_session(servers: Servers) -> None:
    import uuid

    from langgraph.pregel.remote import RemoteGraph
    from langgraph.types import Command

    remote = RemoteGraph("chat", url=servers.url)
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    async with await remote.astream_events(INPUT, config=config, version="v3") as stream:
        async for _ in stream.values:
            if await stream.interrupted():
                break
        assert await stream.interrupted()
    async with await remote.astream_events(Command(resume="later"), config=config, version="v3") as stream:
        output = await stream.output()
        assert not await stream.interrupted()
    assert output["answer"] == "later" and output["steps"] == ["talk", "ask"]
