"""A client of the support agent, with LangChain's own ``langgraph_sdk``: stream, interrupt, resume, cancel.

Serve the project first (it keeps its data across restarts, in a file store under the project):

    durabletask langgraph dev --config samples/langgraph_server/langgraph.json

then run ``python samples/langgraph_server/client.py [--url http://127.0.0.1:2024]``. Nothing here knows that the
server is not LangChain's: the same calls work against ``langgraph dev``.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from langgraph_sdk import get_client

GRAPH = "support"


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def stream_answer(client: Any, thread_id: str) -> None:
    """The model's answer, token by token (``messages-tuple`` mode), then the node that produced it."""
    tokens: list[str] = []
    async for part in client.runs.stream(
        thread_id, GRAPH, input=_user("What is your refund policy?"), stream_mode=["messages-tuple", "updates"]
    ):
        if part.event == "messages":
            chunk, _metadata = part.data
            if chunk.get("content"):
                tokens.append(chunk["content"])
        elif part.event == "updates":
            print(f"update from {sorted(part.data)}")
    print(f"streamed {len(tokens)} tokens: {''.join(tokens)}")


async def refund_with_approval(client: Any, thread_id: str) -> None:
    """A refund waits for a person (an interrupt, durably: no worker is held), then resumes with a Command."""
    interrupts: list[Any] = []
    async for part in client.runs.stream(
        thread_id, GRAPH, input=_user("Please refund order 42"), stream_mode="updates"
    ):
        if part.event == "updates" and "__interrupt__" in part.data:
            interrupts = part.data["__interrupt__"]
    print(f"interrupted: {interrupts[0]['value']}")
    state = await client.threads.get_state(thread_id)
    print(f"waiting in node {state['next']}")
    final: dict[str, Any] = {}
    async for part in client.runs.stream(thread_id, GRAPH, command={"resume": "approve"}, stream_mode="values"):
        if part.event == "values":
            final = part.data
    print(f"resumed: {final['messages'][-1]['content']}")


async def cancel_report(client: Any, thread_id: str) -> None:
    """A long run in the background, joined from its stream, then cancelled: its node stops and the run ends."""
    run = await client.runs.create(
        thread_id, GRAPH, input=_user("Write the quarterly report"), stream_mode=["custom"], stream_resumable=True
    )
    async for part in client.runs.join_stream(thread_id, run["run_id"], last_event_id="-1"):
        if part.event == "custom":
            print(f"report under way: section {part.data['section']}")
            break
    await client.runs.cancel(thread_id, run["run_id"], wait=True)
    cancelled = await client.runs.get(thread_id, run["run_id"])
    print(f"cancelled: run status {cancelled['status']}")
    thread = await client.threads.get(thread_id)
    print(f"thread status {thread['status']}")


async def main(url: str) -> None:
    client = get_client(url=url)
    assistants = await client.assistants.search(graph_id=GRAPH)
    print(f"assistants: {[a['graph_id'] for a in assistants]}")
    thread = await client.threads.create()
    await stream_answer(client, thread["thread_id"])
    await refund_with_approval(client, thread["thread_id"])
    await cancel_report(client, thread["thread_id"])
    history = await client.threads.get_history(thread["thread_id"], limit=100)
    print(f"history: {len(history)} checkpoints")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:2024", help="the server's URL")
    asyncio.run(main(parser.parse_args().url))
