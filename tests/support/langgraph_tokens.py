"""A chat model that streams its answer token by token and can be held between two tokens, for live-stream tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


class TokenModel(BaseChatModel):
    """Answers ``"".join(tokens)``, streaming one token at a time; ``between(i)`` runs before token ``i`` (i >= 1)."""

    tokens: tuple[str, ...] = ("Hel", "lo")
    between: Callable[[int], None] | None = None

    @property
    def _llm_type(self) -> str:
        return "tokens"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="".join(self.tokens)))])

    def _stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for index, token in enumerate(self.tokens):
            if index and self.between is not None:
                self.between(index)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
