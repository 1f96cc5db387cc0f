"""Agent glue: ``attach_session(agent)`` for any agent callable.

Before a request the agent gets the session's view (system prompt, the memo or summary,
the window) plus the new input; the reference implementation never showed the memo to
the model, this one does. After the request the input and everything the agent produced
(tool calls and their results included) are written back, and one resize runs. A failed
request leaves the session exactly as it was: nothing is written until the agent returns.
A failing memo or summary model never fails the request (``on_memory_error="keep_going"``).

The agent may be a LangGraph/LangChain runnable over ``{"messages": [...]}`` (a compiled
graph, ``create_agent``), a chat model, or a plain callable ``(messages) -> reply``.
"""

from __future__ import annotations

from collections.abc import Iterable
import inspect
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from session_graph.errors import ConfigurationError
from session_graph.integrations.binding import OnMemoryError, SessionBinding
from session_graph.messages import MessageInput, to_message
from session_graph.session import Session

__all__ = ["SessionAgent", "attach_session", "detach_session", "get_session"]


class SessionAgent:
    """An agent with a session attached (what ``attach_session`` returns).

    Concurrent ``ainvoke`` calls take turns on the session (a per-session lock), so each
    request sees the previous one's reply.
    """

    def __init__(self, agent: Any, session: Session, *, on_memory_error: OnMemoryError = "keep_going") -> None:
        if not callable(agent) and not hasattr(agent, "invoke"):
            raise ConfigurationError(f"the agent must be callable or have .invoke(), got {type(agent).__name__}.")
        self.agent = agent
        self.session = session
        self.binding = SessionBinding(session, on_memory_error=on_memory_error, share_across_threads=True)

    # -- requests ----------------------------------------------------------------------------
    def invoke(self, request: Any, config: Any = None) -> Any:
        """Run the agent on the session's view plus ``request``; write back; resize once."""
        new, sent = self._prepare(request)
        if hasattr(self.agent, "invoke"):
            result = self.agent.invoke(self._payload(sent), config)
        else:
            result = self.agent(sent)
            if inspect.isawaitable(result):
                raise ConfigurationError("this agent is async: use await session_agent.ainvoke(...).")
        self.binding.step(self._written_back(new, sent, result), config)
        return result

    async def ainvoke(self, request: Any, config: Any = None) -> Any:
        """Async twin of :meth:`invoke`; concurrent requests on one session take turns."""
        async with self.binding.async_lock(self.session):
            new, sent = self._prepare(request)
            if hasattr(self.agent, "ainvoke"):
                result = await self.agent.ainvoke(self._payload(sent), config)
            else:
                result = self.agent(sent)
                if inspect.isawaitable(result):
                    result = await result
            await self.binding.astep(self._written_back(new, sent, result), config, locked=False)
            return result

    __call__ = invoke

    # -- the spec's chat history proxies -------------------------------------------------------
    def set_chat_history(self, messages: Iterable[MessageInput]) -> SessionAgent:
        """Replace the conversation with ``messages``."""
        checked = [to_message(m, where=f"chat_history[{i}]") for i, m in enumerate(messages)]
        self.session.clear()
        for message in checked:
            self.session.append_message(message)
        return self

    def add_chat_history(self, messages: MessageInput | Iterable[MessageInput]) -> SessionAgent:
        """Append messages to the conversation."""
        items = [messages] if isinstance(messages, BaseMessage | dict) else list(messages)  # type: ignore[arg-type]
        checked = [to_message(m, where=f"chat_history[{i}]") for i, m in enumerate(items)]
        for message in checked:
            self.session.append_message(message)
        return self

    def reset_chat_history(self) -> SessionAgent:
        """Start the conversation over (``Session.clear``)."""
        self.session.clear()
        return self

    def get_session(self) -> Session:
        """The session in front of the agent (also ``agent.session``)."""
        return self.session

    def detach_session(self) -> Any:
        """The agent without its session."""
        return self.agent

    # -- internals -----------------------------------------------------------------------------
    def _prepare(self, request: Any) -> tuple[list[BaseMessage], list[BaseMessage]]:
        if isinstance(request, str):
            items: list[Any] = [HumanMessage(content=request)]
        elif isinstance(request, BaseMessage | dict) and not (isinstance(request, dict) and "messages" in request):
            items = [request]
        elif isinstance(request, dict):
            items = list(request["messages"])
        else:
            items = list(request)
        new = [to_message(m, where=f"request[{i}]") for i, m in enumerate(items)]
        outside = sum(self.session.tokens_of(m) for m in new)  # the request comes on top of the view, within the budget
        return new, [*self.session.view(outside_tokens=outside).messages, *new]

    def _payload(self, messages: list[BaseMessage]) -> Any:
        from langchain_core.language_models import BaseChatModel

        return messages if isinstance(self.agent, BaseChatModel) else {"messages": messages}

    def _written_back(self, new: list[BaseMessage], sent: list[BaseMessage], result: Any) -> list[BaseMessage]:
        """The input and what the agent produced, checked before anything is recorded."""
        produced = _produced(result, sent)
        return [*new, *(to_message(m, where=f"agent output[{i}]") for i, m in enumerate(produced))]


def _produced(result: Any, sent: list[BaseMessage]) -> list[Any]:
    """What the agent added: the messages of its output that were not sent to it."""
    if isinstance(result, dict) and "messages" in result:
        result = result["messages"]
    if isinstance(result, str):
        return [AIMessage(content=result)]
    if isinstance(result, BaseMessage):
        return [result]
    sent_ids = {m.id for m in sent}
    return [m for m in result if not (isinstance(m, BaseMessage) and m.id in sent_ids)]


def attach_session(
    agent: Any,
    session: Session | None = None,
    *,
    mode: Literal["lite", "memo", "summary"] | None = None,
    on_memory_error: OnMemoryError = "keep_going",
) -> SessionAgent:
    """Attach a session (a new one by default) to an agent; ``mode`` sets ``session.mode``.

    ``on_memory_error``: ``"keep_going"`` (a failing memo or summary model logs a warning, the
    reply stands, the next resize resumes) or ``"raise"``.
    """
    if isinstance(agent, SessionAgent):
        raise ConfigurationError("this agent already has a session; detach_session() it first.")
    session = session if session is not None else Session()
    if mode is not None:
        session.configure(mode=mode)
    return SessionAgent(agent, session, on_memory_error=on_memory_error)


def detach_session(agent: SessionAgent) -> Any:
    """The agent without its session."""
    return agent.detach_session()


def get_session(agent: Any) -> Session | None:
    """The session attached to an agent, or None."""
    return agent.session if isinstance(agent, SessionAgent) else None
