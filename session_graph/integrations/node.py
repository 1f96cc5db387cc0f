"""A session step for hand-built LangGraph graphs, and a pre-model hook for the prebuilt agent.

The step records the graph's new messages in the session, judges and resizes, and returns
``Overwrite(window)`` (never ``RemoveMessage(REMOVE_ALL_MESSAGES)``, which a delta channel
ignores), so the parent graph's state really shrinks. With ``goto`` it returns a
``Command``; add it with ``destinations=(goto,)`` so ``get_graph()`` draws the route. The
step closes over a drawing copy of the resize graph, so ``get_graph(xray=True)`` draws it
nested inside the step. The step records messages that reached it: route the model's way
to END through it too if the last reply must be stored before the next turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Overwrite

from session_graph.graph import build_resize_graph
from session_graph.integrations.binding import SessionBinding
from session_graph.session import Session
from session_graph.stores.manager import SessionManager

__all__ = ["session_node", "session_pre_model_hook"]


def session_node(
    session: Session | None = None,
    *,
    manager: SessionManager | None = None,
    key_prefix: str = "",
    messages_key: str = "messages",
    goto: str | None = None,
) -> Callable[[dict[str, Any], RunnableConfig], Any]:
    """A graph node ``(state, config) -> {messages_key: Overwrite(window)}`` (or a Command).

    Example:
        >>> from langgraph.graph import StateGraph, MessagesState
        >>> builder = StateGraph(MessagesState)
        >>> _ = builder.add_node("session", session_node(Session(), goto="model"), destinations=("model",))
    """
    binding = SessionBinding(session, manager=manager, key_prefix=key_prefix)
    # A drawing-only compile (never invoked): resizes run on the session's own graph, compiled
    # with checkpointer=False so LangGraph never checkpoints it inside this graph.
    resize_graph = build_resize_graph(
        resize_types=session.handlers.resize if session is not None else (),
        overrides=session.handlers.overrides if session is not None else None,
        checkpointer=None,
    )

    def session_step(state: dict[str, Any], config: RunnableConfig) -> Any:
        _ = resize_graph  # referenced so get_graph(xray=True) draws the resize graph inside this step
        current = binding.session(config)
        binding.record(current, state[messages_key])
        if current.judge_resize():
            current.resize()
        binding.save(current)
        update = {messages_key: Overwrite(list(current.current_chat_history))}
        return Command(update=update, goto=goto) if goto else update

    return session_step


def session_pre_model_hook(
    session: Session | None = None, *, manager: SessionManager | None = None, key_prefix: str = ""
) -> Callable[[dict[str, Any], RunnableConfig], dict[str, Any]]:
    """A ``pre_model_hook`` for LangGraph's prebuilt ``create_react_agent``.

    It bounds the state (``messages``: ``Overwrite(window)``) and hands the model the
    session's view (``llm_input_messages``: system prompt, memo or summary, window).
    """
    binding = SessionBinding(session, manager=manager, key_prefix=key_prefix)

    def pre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        current = binding.session(config)
        binding.record(current, state["messages"])
        if current.judge_resize():
            current.resize()
        binding.save(current)
        return {"messages": Overwrite(list(current.current_chat_history)), "llm_input_messages": current.view().messages}

    return pre_model_hook
