"""``stream_mode="events"`` through the server: what in-process LangGraph's ``astream_events`` v2 yields, filtered
as LangGraph's server filters it, alone and beside other modes, and resumed after any event."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.langgraph_server.support_events import BUILDERS, normalised, reference_events, serve
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]

INPUT = {"messages": [{"role": "user", "content": "weather in Paris?"}]}


async def test_events_equal_langgraph_astream_events(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [p async for p in s.sdk.runs.stream(tid, "agent", input=INPUT, stream_mode="events")]
        assert parts[0].event == "metadata" and parts[-1].event == "end"
        run_id = parts[0].data["run_id"]
        ours = [p.data for p in parts if p.event == "events"]
        assert {p.event for p in parts} == {"metadata", "events", "end"}
        reference = [data for _, data in await reference_events("agent", INPUT, run_id, tid)]
        assert normalised(ours) == normalised(reference)
        kinds = {(e["event"], e["name"]) for e in ours}
        assert {
            ("on_chat_model_stream", "ScriptedChatModel"),
            ("on_tool_start", "lookup"),
            ("on_tool_end", "lookup"),
            ("on_custom_event", "progress"),
            ("on_chain_start", "report"),
            ("on_chain_start", "mark"),  # the subgraph's node, inside the "report" node's task
        } <= kinds
        # the run's chain is the server's run: it starts first, ends last, and is every node's parent
        assert (ours[0]["event"], ours[0]["run_id"]) == ("on_chain_start", run_id)
        assert (ours[-1]["event"], ours[-1]["run_id"]) == ("on_chain_end", run_id)
        nodes = [e for e in ours if e["event"] == "on_chain_start" and e["tags"][:1] == ["graph:step:1"]]
        assert nodes and nodes[0]["parent_ids"] == [run_id]
        tokens = [e["data"]["chunk"]["content"] for e in ours if e["event"] == "on_chat_model_stream"]
        assert "".join(tokens) == "let me lookit is sunny in Paris"


async def test_events_beside_values_and_updates_keep_langgraph_order(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        modes = ["events", "values", "updates"]
        parts = [p async for p in s.sdk.runs.stream(tid, "agent", input=INPUT, stream_mode=modes)]
        run_id = parts[0].data["run_id"]
        ours = [[p.event, p.data] for p in parts if p.event not in ("metadata", "end")]
        reference = await reference_events("agent", INPUT, run_id, tid, modes=["values", "updates"])
        assert normalised(ours) == normalised([list(pair) for pair in reference])
        assert {"events", "values", "updates"} == {name for name, _ in ours}


async def test_resuming_after_any_event_gives_exactly_the_rest(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [
            p
            async for p in s.sdk.runs.stream(
                tid, "agent", input=INPUT, stream_mode=["events", "values"], stream_resumable=True
            )
        ]
        run_id = parts[0].data["run_id"]
        assert all(p.id for p in parts) and len({p.id for p in parts}) == len(parts)
        for cut in range(len(parts)):
            rest = [p async for p in s.sdk.runs.join_stream(tid, run_id, last_event_id=parts[cut].id)]
            assert rest == parts[cut + 1 :], cut
        async with serve(runs_hub, start_worker=False) as other:  # another server process would read the same
            middle = len(parts) // 2
            rest = [p async for p in other.sdk.runs.join_stream(tid, run_id, last_event_id=parts[middle].id)]
            assert rest == parts[middle + 1 :]


async def test_events_beside_tokens_and_subgraph_updates(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        modes = ["events", "messages-tuple", "updates"]
        stream = s.sdk.runs.stream(tid, "agent", input=INPUT, stream_mode=modes, stream_subgraphs=True)
        parts = [p async for p in stream]
        run_id = parts[0].data["run_id"]
        ours = [(p.event, p.data) for p in parts if p.event not in ("metadata", "end")]
        reference = await reference_events("agent", INPUT, run_id, tid, modes=modes[1:], subgraphs=True)
        # In-process, a token's messages chunk and its on_chat_model_stream event race (one goes through the
        # loop's stream, the other through the callbacks); each kind's own sequence is what is fixed.
        for kind in ("events", "messages", "updates"):
            assert normalised([[n, d] for n, d in ours if n.split("|")[0] == kind]) == normalised(
                [[n, d] for n, d in reference if n.split("|")[0] == kind]
            ), kind
        without_tokens = [[n, d] for n, d in ours if n != "messages"]
        assert normalised(without_tokens) == normalised([[n, d] for n, d in reference if n != "messages"])
        assert any(name.startswith("updates|report:") for name, _ in ours)


async def test_async_nodes_text_models_retrievers_and_failing_tools(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [p async for p in s.sdk.runs.stream(tid, "misc", input=INPUT, stream_mode="events")]
        run_id = parts[0].data["run_id"]
        ours = [p.data for p in parts if p.event == "events"]
        reference = [data for _, data in await reference_events("misc", INPUT, run_id, tid)]
        assert normalised(ours) == normalised(reference)
        kinds = [(e["event"], e["name"]) for e in ours]
        for expected in ("on_retriever_end", "_Shelf"), ("on_llm_stream", "ScriptedLLM"):
            assert expected in kinds
        # a model streamed by the node itself: its chunks come from the stream, each once
        by_hand = [e["data"]["chunk"]["content"] for e in ours if e["event"] == "on_chat_model_stream"]
        by_hand = [piece for piece in by_hand if piece]  # the model's last chunk is empty
        assert by_hand == ["streamed", " by", " hand"]
        errors = [e["data"]["error"] for e in ours if e["event"] == "on_tool_error"]
        assert errors == [
            {"error": "ValueError", "message": "refused: no"},
            {"error": "ToolException", "message": "An internal error occurred"},
        ]


async def test_an_interrupted_run_and_its_resume(runs_hub: RunsHub) -> None:
    graph = BUILDERS["ask"]().compile(checkpointer=InMemorySaver())
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        for body in ({"input": INPUT}, {"command": {"resume": "yes"}}):
            parts = [p async for p in s.sdk.runs.stream(tid, "ask", stream_mode="events", **body)]  # type: ignore[arg-type]
            run_id = parts[0].data["run_id"]
            ours = [p.data for p in parts if p.event == "events"]
            value = body.get("input", body)
            reference = [data for _, data in await reference_events("ask", value, run_id, tid, graph=graph)]
            assert normalised(ours) == normalised(reference)
            assert ours[-1]["event"] == "on_chain_end" and parts[-1].event == "end"
        assert ours[0]["data"]["input"]["resume"] == "yes"
        assert ("on_custom_event", "answered") in [(e["event"], e["name"]) for e in ours]


async def test_a_failed_run_ends_its_events_where_langgraph_does(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [p async for p in s.sdk.runs.stream(tid, "boom", input=INPUT, stream_mode="events")]
        run_id = parts[0].data["run_id"]
        reference = await reference_events("boom", INPUT, run_id, tid)
        assert reference[-1][0] == "error"
        ours = [p.data for p in parts if p.event == "events"]
        assert normalised(ours) == normalised([data for _, data in reference[:-1]])
        assert [p.event for p in parts[len(ours) + 1 :]] == ["error", "end"]
        assert parts[-2].data["message"] == "the node broke after its model answered"


async def test_parallel_nodes_keep_each_their_own_order(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [p async for p in s.sdk.runs.stream(tid, "fan", input=INPUT, stream_mode=["events", "updates"])]
        run_id = parts[0].data["run_id"]
        ours = [(p.event, p.data) for p in parts if p.event not in ("metadata", "end")]
        reference = await reference_events("fan", INPUT, run_id, tid, modes=["updates"])

        def of(pairs: list[tuple[str, Any]], node: str | None) -> list[Any]:
            return [d for n, d in pairs if n == "events" and d["metadata"].get("langgraph_node") == node]

        for node in ("left", "right", None):  # each node's events, and the run's own, in their order
            assert normalised(of(ours, node)) == normalised(of(reference, node)), node
        assert normalised(sorted(d["event"] + d["name"] for n, d in ours if n == "events")) == normalised(
            sorted(d["event"] + d["name"] for n, d in reference if n == "events")
        )
        # the superstep's updates come once both nodes' events are in, the run's end after them
        updates = [i for i, (n, _) in enumerate(ours) if n == "updates"]
        node_events = [i for i, (n, d) in enumerate(ours) if n == "events" and d["metadata"].get("langgraph_node")]
        assert len(updates) == 2 and min(updates) > max(node_events)
        assert ours[-1][1]["event"] == "on_chain_end" and ours[-1][1]["run_id"] == run_id
