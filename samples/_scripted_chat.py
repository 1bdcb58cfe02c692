"""A scripted chat client for Microsoft Agent Framework, so the durable agent sample runs offline and repeatably.

``ScriptedChatClient`` implements Agent Framework's chat client interface (``BaseChatClient`` with the
``FunctionInvocationLayer``, the same layering the framework's own clients use), so an ``Agent`` built on it
runs its tools exactly as it would with a hosted model. Instead of a model it answers from a script: each
:class:`Turn` names a phrase of the user's message and the replies for that turn, one per model call. A step
is either a :class:`ToolCall` (the "model" asks the agent to run a tool) or a :class:`Reply` (the final text).
The step served is chosen from the conversation itself (how many tool results follow the user's message), not
from a counter in the process, so a fresh process picks up where a crashed one stopped.

Every model call is written to a log file as it starts and when it has been served, with the process ID,
so a sample can count how often each call ran across processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)

# How long a stalled call waits for its process to be killed before it gives up with an error.
STALL_LIMIT_SECONDS = 120.0


@dataclass(frozen=True)
class ToolCall:
    """The model asks for a tool: ``name`` with ``arguments``."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The model's final text for the turn; ``{tool_result}`` stands for the latest tool result."""

    text: str


@dataclass(frozen=True)
class Turn:
    """What the model answers when the user's latest message contains ``when``: one step per model call."""

    when: str
    steps: tuple[ToolCall | Reply, ...]


@dataclass(frozen=True)
class CallRecord:
    """One line of the call log."""

    event: str  # "start" when a model call begins, "served" when its answer has been returned
    agent: str
    turn: str
    step: int
    history: int  # messages in the conversation before the user's latest one
    pid: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.agent, self.turn, self.step)


def read_call_log(path: Path) -> list[CallRecord]:
    """Every record in the call log at ``path`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    return [CallRecord(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A deterministic stand-in for a hosted model, for the agent named ``agent``.

    Args:
        agent: The agent this client serves (it labels the call log).
        script: The turns it knows; a user message that matches none of them is an error.
        call_log: The file each model call is appended to (one JSON object a line).
        stall_on: A turn (its ``when`` phrase) whose model calls never return in this process: the call is
            logged as started and then waits, so a sample can kill the process while the call is in flight.
    """

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, agent: str, script: Sequence[Turn], call_log: Path, stall_on: str | None = None) -> None:
        super().__init__()
        self._agent = agent
        self._script = tuple(script)
        self._call_log = call_log
        self._stall_on = stall_on

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        # Like a hosted model, it can only ask for a tool the agent offers in this call.
        offered = frozenset(str(getattr(t, "name", t)) for t in options.get("tools") or ())
        if stream:
            return self._build_response_stream(self._stream(messages, offered))
        return self._respond(messages, offered)

    async def _respond(self, messages: Sequence[Message], offered: frozenset[str]) -> ChatResponse:
        contents = await self._serve(messages, offered)
        return ChatResponse(messages=[Message(role="assistant", contents=contents)], created_at=_now())

    async def _stream(self, messages: Sequence[Message], offered: frozenset[str]) -> AsyncIterator[ChatResponseUpdate]:
        contents = await self._serve(messages, offered)
        yield ChatResponseUpdate(role="assistant", contents=contents, created_at=_now())

    async def _serve(self, messages: Sequence[Message], offered: frozenset[str]) -> list[Content]:
        turn, last_user, results = self._locate(messages)
        step = len(results)
        due = turn.steps[step]
        if isinstance(due, ToolCall) and due.name not in offered:
            raise LookupError(f"{self._agent}: the script asks for tool {due.name!r}; offered: {sorted(offered)}")
        self._log("start", turn.when, step, last_user)
        if turn.when == self._stall_on:
            await _stall(f"{self._agent}: the call for {turn.when!r} was meant to be interrupted")
        # The call ID derives from the conversation, so the same call gets the same ID in any process.
        call_id = f"{self._agent}-{last_user}-{step}"
        contents = _contents(due, call_id, str(results[-1].result) if results else "")
        self._log("served", turn.when, step, last_user)
        return contents

    def _locate(self, messages: Sequence[Message]) -> tuple[Turn, int, list[Content]]:
        """The turn the latest user message asks for, where that message is, and the tool results after it."""
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        if last_user < 0:
            raise ValueError(f"{self._agent}: no user message in the conversation")
        prompt = messages[last_user].text
        turn = next((t for t in self._script if t.when in prompt), None)
        if turn is None:
            raise LookupError(f"{self._agent}: the script has no turn for {prompt!r}")
        results = [c for m in messages[last_user + 1 :] for c in m.contents if c.type == "function_result"]
        if len(results) >= len(turn.steps):
            raise LookupError(f"{self._agent}: the turn {turn.when!r} has no step {len(results)}")
        return turn, last_user, results

    def _log(self, event: str, turn: str, step: int, history: int) -> None:
        record = CallRecord(event=event, agent=self._agent, turn=turn, step=step, history=history, pid=os.getpid())
        # One short line in append mode, flushed and synced, so a SIGKILL right after loses nothing written.
        with self._call_log.open("a", encoding="utf-8") as log:
            log.write(json.dumps(asdict(record)) + "\n")
            log.flush()
            os.fsync(log.fileno())


def _contents(step: ToolCall | Reply, call_id: str, tool_result: str) -> list[Content]:
    if isinstance(step, ToolCall):
        return [Content.from_function_call(call_id, step.name, arguments=dict(step.arguments))]
    return [Content.from_text(step.text.replace("{tool_result}", tool_result))]


async def _stall(reason: str) -> None:
    deadline = time.monotonic() + STALL_LIMIT_SECONDS
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{reason}, but its process was still running after {STALL_LIMIT_SECONDS:.0f} s")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
