"""A scripted LangChain chat model, so LangGraph agents run offline and repeatably, in any process.

``ScriptedChatModel`` is a ``BaseChatModel``: ``create_react_agent``, ``ToolNode`` agents and plain nodes call it
as they would call a hosted model, and ``bind_tools`` works. Instead of a model it answers from a script: each
:class:`Turn` names a phrase of the user's latest message and the replies for that turn, one per model call. A
step is a :class:`ToolCalls` (the "model" asks for tools) or a :class:`Reply` (the final text). The step served
is chosen from the conversation itself (how many AI messages follow the user's latest message), never from a
counter in the process, so a fresh process picks up exactly where a killed one stopped, and the tool-call IDs
derive from the conversation too.

Every call can be appended to a call log (one JSON line: event, turn, step, PID), so a program can count how
often each model call ran across processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool


@dataclass(frozen=True)
class ToolCalls:
    """The model asks for tools: each entry is ``(tool name, arguments)``; several run in parallel."""

    calls: tuple[tuple[str, Mapping[str, Any]], ...]
    text: str = ""


@dataclass(frozen=True)
class Reply:
    """The model's final text for the turn; ``{tool_result}`` stands for the latest tool message's content."""

    text: str


@dataclass(frozen=True)
class Turn:
    """What the model answers when the user's latest message contains ``when``: one step per model call."""

    when: str
    steps: tuple[ToolCalls | Reply, ...] = field(default_factory=tuple)


def read_call_log(path: Path) -> list[dict[str, Any]]:
    """Every record of the call log at ``path`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class ScriptedChatModel(BaseChatModel):
    """A deterministic stand-in for a hosted chat model.

    Attributes:
        script: The turns it knows; a user message that matches none of them is an error.
        call_log: A file each served call is appended to (JSON lines), or None.
        on_call: Called with ``(turn, step)`` for each served call, in the calling process, or None.
    """

    script: tuple[Turn, ...]
    call_log: Path | None = None
    on_call: Callable[[str, int], None] | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        turn, start, replies, last_tool = self._locate(messages)
        step = len(replies)
        if step >= len(turn.steps):
            raise LookupError(f"the script's turn {turn.when!r} has no step {step}")
        due = turn.steps[step]
        offered = {t["function"]["name"] for t in kwargs.get("tools") or ()}
        if isinstance(due, ToolCalls):
            missing = [name for name, _ in due.calls if name not in offered]
            if missing:
                raise LookupError(f"the script asks for tools {missing}; the model was offered {sorted(offered)}")
        message = _message(due, f"{_slug(turn.when)}-{start}-{step}", last_tool)
        self._record(turn.when, step)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _locate(self, messages: Sequence[BaseMessage]) -> tuple[Turn, int, list[BaseMessage], str]:
        start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        if start < 0:
            raise ValueError("the conversation has no user message")
        prompt = str(messages[start].content)
        turn = next((t for t in self.script if t.when in prompt), None)
        if turn is None:
            raise LookupError(f"the script has no turn for {prompt!r}")
        after = messages[start + 1 :]
        replies = [m for m in after if isinstance(m, AIMessage)]
        tools = [m for m in after if m.type == "tool"]
        return turn, start, replies, str(tools[-1].content) if tools else ""

    def _record(self, turn: str, step: int) -> None:
        if self.on_call is not None:
            self.on_call(turn, step)
        if self.call_log is not None:
            append_call(self.call_log, {"event": "model", "turn": turn, "step": step})


def append_call(path: Path, record: Mapping[str, Any]) -> None:
    """Appends ``record`` (with this process's PID) to the call log at ``path``."""
    line = json.dumps({**record, "pid": os.getpid()})
    # Appended, flushed and synced: a SIGKILL right after the call loses nothing written.
    with path.open("a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())


def _message(step: ToolCalls | Reply, call_prefix: str, tool_result: str) -> AIMessage:
    if isinstance(step, Reply):
        return AIMessage(content=step.text.replace("{tool_result}", tool_result))
    calls = [
        {"name": name, "args": dict(args), "id": f"call-{call_prefix}-{k}", "type": "tool_call"}
        for k, (name, args) in enumerate(step.calls)
    ]
    return AIMessage(content=step.text, tool_calls=calls)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:24]
