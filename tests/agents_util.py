"""Fake models and tools for agent loops: tool calls, replies, failures, recorded prompts; a session counting tokens."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import json
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from session_graph import Session


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model that accepts tools and records every prompt it is sent."""

    prompts: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance
    fail_on: set[int] = set()  # noqa: RUF012 - call numbers (from 0) that raise
    delay: float = 0.0

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.prompts = [*self.prompts, list(messages)]
        if len(self.prompts) - 1 in self.fail_on:
            raise ConnectionError("model provider unavailable (simulated)")
        return super()._generate(messages, stop, run_manager, **kwargs)

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        from langchain_core.messages import AIMessageChunk
        from langchain_core.outputs import ChatGenerationChunk

        message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        chunk = AIMessageChunk(content=message.content, id=message.id, tool_call_chunks=[
            {"id": c["id"], "name": c["name"], "args": json.dumps(c["args"]), "index": i} for i, c in enumerate(message.tool_calls)
        ])
        if run_manager is not None and isinstance(message.content, str):
            run_manager.on_llm_new_token(message.content, chunk=ChatGenerationChunk(message=chunk))
        yield ChatGenerationChunk(message=chunk)

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if self.delay:  # recorded before the wait, so a test can see the call is under way
            self.prompts = [*self.prompts, list(messages)]
            await asyncio.sleep(self.delay)
            return GenericFakeChatModel._generate(self, messages, stop, run_manager, **kwargs)
        return self._generate(messages, stop, run_manager, **kwargs)


def tool_then_answer(turns: int = 10_000, words: int = 12) -> Iterator[AIMessage]:
    """Per turn: a tool call, then an answer."""
    for i in range(turns):
        yield AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "lookup", "args": {"topic": f"t{i}"}}])
        yield AIMessage(content=f"answer {i}: " + "word " * words)


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}: " + "detail " * 8


@tool
def broken(topic: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"lookup service down for {topic}")


def model(replies: Iterator[AIMessage] | None = None, **kwargs: Any) -> ToolCallingFake:
    return ToolCallingFake(messages=replies or tool_then_answer(), **kwargs)


def counted_session(key: str) -> Session:
    """A session counting tiktoken tokens under a token budget (a ``session_factory``)."""
    return Session(key).configure(mode="lite", limit={"tokens": 160}).set_settings("session.tokens.encoding", "cl100k_base")
