"""SessionMiddleware: a session in front of a LangChain ``create_agent`` model.

Before each model call the new messages of the agent's state (the user's input, tool
results, the last reply) are recorded in the session, the policy judges and the session
resizes, and the agent's ``messages`` are replaced with ``Overwrite(window)``: the
checkpointed state stays bounded while the full history lives in the session (and its
store). ``wrap_model_call`` then gives the model the session's view: the system prompt,
the memo or summary (merged into the one system message, which every provider accepts)
and the window within the token budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage
from langgraph.types import Overwrite

from session_graph.integrations.binding import SessionBinding
from session_graph.session import Session
from session_graph.stores.manager import SessionManager

__all__ = ["SessionAgentState", "SessionMiddleware"]


class SessionAgentState(AgentState):
    """The agent state with the session's key and the memo the model saw."""

    session_key: NotRequired[str]
    memo: NotRequired[dict[str, Any]]


class SessionMiddleware(AgentMiddleware[SessionAgentState]):
    """Put a Session (or one per thread, from a SessionManager) in front of the model.

    Args:
        session: one session for every run.
        manager: one session per ``thread_id``, loaded from and saved to its store.
        key_prefix: prepended to the thread id to make the session key.
    """

    state_schema = SessionAgentState

    def __init__(self, session: Session | None = None, *, manager: SessionManager | None = None, key_prefix: str = "") -> None:
        super().__init__()
        self.binding = SessionBinding(session, manager=manager, key_prefix=key_prefix)

    # -- before each model call: record, resize, bound the state ----------------------------
    # The store is written when a resize is about to drop messages from the checkpointed
    # state (they must be stored first) and at the end of the run; in between, every new
    # message is in the checkpoint, and a resumed thread records it again from there.
    def before_model(self, state: SessionAgentState, runtime: Any) -> dict[str, Any] | None:
        session = self.binding.session()
        self.binding.record(session, state["messages"])
        if session.judge_resize():
            session.resize()
            self.binding.save(session)
        return self._bounded(session, state)

    async def abefore_model(self, state: SessionAgentState, runtime: Any) -> dict[str, Any] | None:
        session = self.binding.session()
        self.binding.record(session, state["messages"])
        if await session.async_judge_resize():
            await session.async_resize()
            self.binding.save(session)
        return self._bounded(session, state)

    def _bounded(self, session: Session, state: SessionAgentState) -> dict[str, Any]:
        update: dict[str, Any] = {"session_key": session.id, "memo": session.memo_for_model}
        window = session.current_chat_history
        if [m.id for m in state["messages"]] != [m.id for m in window]:
            update["messages"] = Overwrite(list(window))
        return update

    # -- after each model call the reply is recorded (a tool that fails next must not leave a
    # checkpointed tool call the session lacks); after the run everything is saved ----------
    def after_model(self, state: SessionAgentState, runtime: Any) -> None:
        self.binding.record(self.binding.session(), state["messages"])

    async def aafter_model(self, state: SessionAgentState, runtime: Any) -> None:
        self.after_model(state, runtime)

    def after_agent(self, state: SessionAgentState, runtime: Any) -> None:
        session = self.binding.session()
        self.binding.record(session, state["messages"])
        self.binding.save(session)

    async def aafter_agent(self, state: SessionAgentState, runtime: Any) -> None:
        self.after_agent(state, runtime)

    # -- what the model sees ------------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(self._with_view(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(self._with_view(request))

    def _with_view(self, request: ModelRequest) -> ModelRequest:
        session = self.binding.session()
        own = session.tokens_of(request.system_message) if request.system_message is not None else 0
        view = session.view(outside_tokens=own).messages  # the agent's system prompt counts against the budget
        lead = 0
        while lead < len(view) and isinstance(view[lead], SystemMessage):
            lead += 1
        parts = [request.system_message.text] if request.system_message is not None else []
        parts += [message.text for message in view[:lead]]
        system = SystemMessage(content="\n\n".join(p for p in parts if p)) if parts else None
        return request.override(messages=list(view[lead:]), system_message=system)
