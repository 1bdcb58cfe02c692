"""Interrupts through langgraph-sdk's ``threads.stream``: ``thread.values`` until ``thread.interrupted``, then
``thread.run.respond``, over SSE and WebSocket, with the async and the sync client."""

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
