"""The thread-centric protocol without I/O: commands, filters, and a run's chunks as protocol events."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_protocol import Event  # noqa: F401  (the bindings the SDK types its events with)
from langgraph_sdk.stream.subscription import matches_subscription

from durabletask.extensions.langgraph._server import protocol_commands as pc
from durabletask.extensions.langgraph._server import protocol_events as pe


def _parse(method: str, params: Any) -> Any:
    return pc.parse_params(pc.parse_command({"id": 1, "method": method, "params": params}))


def test_run_start_and_respond_parse() -> None:
    start = _parse("run.start", {"assistant_id": "agent", "input": {"x": 1}, "config": {"tags": ["a"]}})
    assert start == pc.RunStart("agent", {"x": 1}, {"tags": ["a"]}, None)
    one = _parse("input.respond", {"namespace": [], "interrupt_id": "i-1", "response": "yes"})
    assert one.answers == (pc.Answer((), "i-1", "yes"),)
    many = _parse(
        "input.respond",
        {
            "responses": [
                {"namespace": ["a:1"], "interrupt_id": "x", "response": 1},
                {"namespace": [], "interrupt_id": "y", "response": None},
            ],
            "goto": "node",
        },
    )
    assert [a.interrupt_id for a in many.answers] == ["x", "y"] and many.goto == "node"


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("body", "code", "names"),
    [
        ([1, 2], "invalid_argument", "command"),
        ({"method": "run.start"}, "invalid_argument", "id"),
        ({"id": -1, "method": "run.start"}, "invalid_argument", "id"),
        ({"id": True, "method": "run.start"}, "invalid_argument", "id"),
        ({"id": 2**60, "method": "run.start"}, "invalid_argument", "id"),
        ({"id": 1}, "invalid_argument", "method"),
        ({"id": 1, "method": "x" * 100}, "invalid_argument", "method"),
        ({"id": 1, "method": "run.start", "params": [1]}, "invalid_argument", "params"),
        ({"id": 1, "method": "run.explode"}, "unknown_command", "run.explode"),
        ({"id": 1, "method": "run.start", "params": {}}, "invalid_argument", "params.assistant_id"),
        ({"id": 1, "method": "run.start", "params": {"assistant_id": 7}}, "invalid_argument", "params.assistant_id"),
        (
            {"id": 1, "method": "run.start", "params": {"assistant_id": "a", "config": "x"}},
            "invalid_argument",
            "params.config",
        ),
        ({"id": 1, "method": "input.respond", "params": {"interrupt_id": "i"}}, "invalid_argument", "params.response"),
        (
            {"id": 1, "method": "input.respond", "params": {"response": 1, "interrupt_id": ""}},
            "invalid_argument",
            "params.interrupt_id",
        ),
        ({"id": 1, "method": "input.respond", "params": {"responses": []}}, "invalid_argument", "params.responses"),
        (
            {
                "id": 1,
                "method": "input.respond",
                "params": {"responses": [{"interrupt_id": "a", "response": 1}, {"interrupt_id": "a", "response": 2}]},
            },
            "invalid_argument",
            "answered twice",
        ),
        (
            {"id": 1, "method": "input.respond", "params": {"interrupt_id": "a", "response": 1, "goto": 3}},
            "invalid_argument",
            "params.goto",
        ),
        (
            {
                "id": 1,
                "method": "input.respond",
                "params": {"interrupt_id": "a", "response": 1, "namespace": ["x" * 600]},
            },
            "invalid_argument",
            "params.namespace[0]",
        ),
        (
            {"id": 1, "method": "input.inject", "params": {"message": {"role": "robot", "content": "hi"}}},
            "invalid_argument",
            "params.message.role",
        ),
        ({"id": 1, "method": "state.get", "params": {"keys": "messages"}}, "invalid_argument", "params.keys"),
        ({"id": 1, "method": "state.listCheckpoints", "params": {"limit": 10**6}}, "invalid_argument", "params.limit"),
        ({"id": 1, "method": "state.fork", "params": {}}, "invalid_argument", "params.checkpoint_id"),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": []}},
            "invalid_argument",
            "params.channels",
        ),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values", "vibes"]}},
            "invalid_argument",
            "params.channels[1]",
        ),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["custom:"]}},
            "invalid_argument",
            "params.channels[0]",
        ),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"], "depth": -1}},
            "invalid_argument",
            "params.depth",
        ),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"], "namespaces": [[1]]}},
            "invalid_argument",
            "params.namespaces[0][0]",
        ),
        (
            {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"], "namespaces": [[]] * 65}},
            "invalid_argument",
            "params.namespaces",
        ),
        ({"id": 1, "method": "subscription.reconnect", "params": {}}, "invalid_argument", "params.run_id"),
    ],
)
def test_bad_commands_are_refused_naming_the_field(body: Any, code: str, names: str) -> None:
    with pytest.raises(pc.ProtocolError) as caught:
        pc.parse_params(pc.parse_command(body))
    assert caught.value.code == code
    assert names in caught.value.message
    answer = pc.failure(pc.command_id_of(body), caught.value)
    assert answer["type"] == "error" and answer["error"] == code


def test_answers_carry_the_id_and_the_sequence() -> None:
    assert pc.success(3, {"run_id": "r"}, seq=41) == {
        "type": "success",
        "id": 3,
        "result": {"run_id": "r"},
        "meta": {"applied_through_seq": 41},
    }
    assert "meta" not in pc.success(3, {})
    assert pc.command_id_of({"id": 5}) == 5 and pc.command_id_of({"id": "5"}) is None


def _wire(body: pe.Body, seq: int = 1) -> dict[str, Any]:
    return pe.event(body, seq, 0)


@pytest.mark.parametrize(
    ("body", "params"),
    [
        (pe.Body("values", (), {}), {"channels": ["values"]}),
        (pe.Body("values", ("sub:1",), {}), {"channels": ["values"], "namespaces": [["sub"]], "depth": 0}),
        (pe.Body("values", ("sub:1", "inner:2"), {}), {"channels": ["values"], "namespaces": [["sub"]], "depth": 0}),
        (pe.Body("values", ("sub:1", "inner:2"), {}), {"channels": ["values"], "namespaces": [["sub"]]}),
        (pe.Body("custom", (), {"name": "progress"}), {"channels": ["custom"]}),
        (pe.Body("custom", (), {"name": "progress"}), {"channels": ["custom:progress"]}),
        (pe.Body("custom", (), {"name": "progress"}), {"channels": ["custom:other"]}),
        (pe.Body("input.requested", (), {"interrupt_id": "i"}), {"channels": ["input"]}),
        (pe.Body("lifecycle", ("a:1",), {"event": "started"}), {"channels": ["lifecycle"], "namespaces": [["a:2"]]}),
        (pe.Body("tasks", ("a:1",), {}), {"channels": ["tasks"], "namespaces": [[]], "depth": 1}),
        (pe.Body("values", ("a:1",), {}), {"channels": ["values"], "depth": 0}),
    ],
)
def test_filters_match_as_the_sdk_matches(body: pe.Body, params: dict[str, Any]) -> None:
    wanted = pc.parse_filter(params)
    expected = matches_subscription(_wire(body), params)  # type: ignore[arg-type]
    if "namespaces" not in params and "depth" in params:
        expected = expected and len(body.namespace) <= params["depth"]
    assert pe.matches(body, wanted) == expected


def _chunk(text: str, *, last: bool = False, **extra: Any) -> dict[str, Any]:
    message = AIMessageChunk(content=text, id="ai-1", **extra)
    if last:
        message.chunk_position = "last"
    return message.model_dump()


def test_a_run_becomes_lifecycle_values_messages_and_custom_events() -> None:
    t = pe.Translator()
    meta = {"langgraph_node": "talk", "ls_provider": "fake"}
    parts = [
        pe.part_of("metadata", {"run_id": "r1", "attempt": 1}),
        pe.part_of("values", {"x": 0}),
        pe.part_of("custom", {"name": "progress", "step": "talk"}),
        pe.part_of("messages", [_chunk("Hello,"), meta]),
        pe.part_of("messages", [_chunk(" world!", last=True), meta]),
        pe.part_of("updates", {"talk": {"x": 1}}),
        pe.part_of("values|sub:1", {"y": 2}),
        pe.part_of("debug", {"ignored": True}),
        pe.part_of("end", {"status": "success"}),
    ]
    bodies = [body for part in parts if part is not None for body in t.feed(part)]
    root = [b for b in bodies if not b.namespace]
    assert [(b.method, b.data.get("event")) for b in root if b.method in ("lifecycle", "messages")] == [
        ("lifecycle", "running"),
        ("messages", "message-start"),
        ("messages", "content-block-start"),
        ("messages", "content-block-delta"),
        ("messages", "content-block-delta"),
        ("messages", "content-block-finish"),
        ("messages", "message-finish"),
        ("lifecycle", "completed"),
    ]
    finish = next(b for b in bodies if b.data.get("event") == "content-block-finish")
    assert finish.data["content"] == {"type": "text", "text": "Hello, world!"}
    assert pe.Body("values", ("sub:1",), {"y": 2}) in bodies
    assert pe.Body("updates", (), {"talk": {"x": 1}}) in bodies
    assert pe.Body("custom", (), {"name": "progress", "step": "talk"}) in bodies
    assert all(b.data.get("run_id") == "r1" for b in root if b.method == "lifecycle")


def test_streamed_tool_call_arguments_finish_as_a_tool_call() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    first = _chunk("", tool_call_chunks=[{"index": 0, "id": "c1", "name": "search", "args": '{"q": '}])
    last = _chunk("", last=True, tool_call_chunks=[{"index": 0, "id": None, "name": None, "args": '"v3"}'}])
    bodies = t.feed(pe.Part("messages", (), [first, {}])) + t.feed(pe.Part("messages", (), [last, {}]))
    finish = next(b.data for b in bodies if b.data.get("event") == "content-block-finish")
    assert finish["content"] == {"type": "tool_call", "id": "c1", "name": "search", "args": {"q": "v3"}}


def test_interrupts_are_announced_once_and_the_run_ends_interrupted() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    interrupt = [{"value": "Are we good?", "id": "int-1"}]
    bodies = t.feed(pe.Part("updates", (), {"__interrupt__": interrupt}))
    bodies += t.feed(pe.Part("values", (), {"x": 1, "__interrupt__": interrupt}))
    bodies += t.feed(pe.Part("end", (), {"status": "success"}))
    asked = [b for b in bodies if b.method == "input.requested"]
    assert [b.data for b in asked] == [{"interrupt_id": "int-1", "payload": "Are we good?", "value": "Are we good?"}]
    assert pe.Body("values", (), {"x": 1}) in bodies
    assert bodies[-1].data["event"] == "interrupted"


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([pe.Part("end", (), {"status": "interrupted"})], pe.CANCELLED),
        ([pe.Part("end", (), {"status": "error"})], "the run ended with status error"),
        ([pe.Part("error", (), {"error": "ValueError", "message": "boom"}), pe.Part("end", (), None)], "boom"),
    ],
)
def test_failed_and_cancelled_runs_end_failed(parts: list[pe.Part], expected: str) -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    bodies = [b for part in parts for b in t.feed(part)]
    ends = [b.data for b in bodies if b.method == "lifecycle"]
    assert ends == [{"event": "failed", "error": expected, "run_id": "r"}]


def test_node_outputs_are_not_model_streams_but_unstreamed_model_answers_are() -> None:
    t = pe.Translator()
    whole = {"type": "ai", "content": "done.", "id": "m2"}
    assert t.feed(pe.Part("messages", (), [whole, {"langgraph_node": "agent"}])) == []
    bodies = t.feed(pe.Part("messages", (), [whole, {"langgraph_node": "agent", "ls_provider": "x"}]))
    assert [b.data["event"] for b in bodies] == [
        "message-start",
        "content-block-start",
        "content-block-delta",
        "content-block-finish",
        "message-finish",
    ]


def test_unknown_parts_and_malformed_chunks_make_nothing() -> None:
    t = pe.Translator()
    assert pe.part_of("events", {}) is None
    assert t.feed(pe.Part("messages", (), "not a pair")) == []
    assert t.feed(pe.Part("messages", (), [3, {}])) == []
    assert t.feed(pe.Part("custom", (), "plain")) == [pe.Body("custom", (), {"payload": "plain"})]


def test_tool_calls_and_tool_messages_in_updates_are_tool_events() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    call = {"type": "ai", "content": "", "tool_calls": [{"id": "tc-1", "name": "search", "args": {"q": "v3"}}]}
    done = {"type": "tool", "content": "found", "tool_call_id": "tc-1", "status": "success"}
    failed = {"type": "tool", "content": "no index", "tool_call_id": "tc-2", "status": "error"}
    bodies = t.feed(pe.Part("updates", (), {"model": {"messages": [call]}}))
    bodies += t.feed(pe.Part("updates", (), {"tools": {"messages": [done, failed]}}))
    assert [b.data for b in bodies if b.method == "tools"] == [
        {"event": "tool-started", "tool_call_id": "tc-1", "tool_name": "search", "input": {"q": "v3"}},
        {"event": "tool-finished", "tool_call_id": "tc-1", "output": done},
        {"event": "tool-error", "tool_call_id": "tc-2", "message": "no index"},
    ]


def test_a_new_attempt_of_a_run_keeps_its_announced_interrupts() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r", "attempt": 1}))
    interrupt = {"__interrupt__": [{"value": 1, "id": "i"}]}

    def asked() -> list[pe.Body]:
        return [b for b in t.feed(pe.Part("updates", (), interrupt)) if b.method == "input.requested"]

    assert len(asked()) == 1
    again = t.feed(pe.Part("run", (), {"run_id": "r", "attempt": 2}))
    assert again == [pe.Body("lifecycle", (), {"event": "running", "attempt": 2, "run_id": "r"})]
    assert asked() == []
    t.feed(pe.Part("run", (), {"run_id": "other"}))
    assert len(asked()) == 1


def test_subgraphs_start_before_their_first_event_and_end_with_their_task() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    child, grandchild = ("tools:t1",), ("tools:t1", "model:t2")
    bodies = t.feed(pe.Part("tasks", grandchild, {"id": "t3", "name": "model", "input": {}}))
    assert [(b.namespace, b.data.get("event")) for b in bodies if b.method == "lifecycle"] == [
        (child, "started"),
        (grandchild, "started"),
    ]
    assert bodies[0].data == {"event": "started", "graph_name": "tools"}
    assert t.feed(pe.Part("tasks", grandchild, {"id": "t3", "result": {}, "interrupts": []}))[1:] == []
    ended = t.feed(pe.Part("tasks", (), {"id": "t1", "name": "tools", "result": {}, "interrupts": [], "error": None}))
    assert [(b.namespace, b.data["event"]) for b in ended if b.method == "lifecycle"] == [
        (grandchild, "completed"),
        (child, "completed"),
    ]
    t.feed(pe.Part("values", ("sub:9",), {}))
    last = t.feed(pe.Part("end", (), {"status": "interrupted"}))
    assert [(b.namespace, b.data["event"]) for b in last] == [(("sub:9",), "failed"), ((), "failed")]


def test_a_superstep_of_a_subgraph_ends_only_the_messages_streaming_at_or_below_it() -> None:
    t = pe.Translator()
    t.feed(pe.Part("run", (), {"run_id": "r"}))
    t.feed(pe.Part("messages", (), [_chunk("root"), {}]))
    t.feed(pe.Part("messages", ("sub:1",), [{**_chunk("deep"), "id": "ai-2"}, {}]))
    ended = t.feed(pe.Part("values", ("sub:1",), {}))
    assert [(b.namespace, b.data["event"]) for b in ended if b.method == "messages"] == [
        (("sub:1",), "content-block-finish"),
        (("sub:1",), "message-finish"),
    ]
    ended = t.feed(pe.Part("values", (), {}))
    assert [b.data["event"] for b in ended if b.method == "messages"] == ["content-block-finish", "message-finish"]


@pytest.mark.adversarial
@pytest.mark.parametrize(("header", "since"), [(None, None), ("", None), ("-1", 0), ("7", 7)])
def test_last_event_id_gives_since(header: str | None, since: int | None) -> None:
    from durabletask.extensions.langgraph._server.protocol_stream import since_of

    assert since_of({"channels": ["values"]}, header).since == since
    assert since_of({"channels": ["values"], "since": 3}, header).since == 3


@pytest.mark.adversarial
@pytest.mark.parametrize("header", ["12.0", "abc", "9" * 17, "-2"])
def test_a_last_event_id_that_is_no_seq_is_refused(header: str) -> None:
    from durabletask.extensions.langgraph._server.protocol_stream import since_of

    with pytest.raises(pc.ProtocolError, match="Last-Event-ID"):
        since_of({"channels": ["values"]}, header)
