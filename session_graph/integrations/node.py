"""A session step for hand-built LangGraph graphs, and a pre-model hook for the prebuilt agent.

``session_node`` runs the agent step (record, judge, resize, save when needed) and replaces
the graph's messages with ``Overwrite(view)``: the system prompt, the memo or summary message
and the window within the token budget. A model node that reads ``state["messages"]`` thus
sends exactly the session's view, memo included; the next step recognises what the view made
(the memo message, synthetic tool results) and never records it. ``Overwrite`` (never
``RemoveMessage(REMOVE_ALL_MESSAGES)``, which a delta channel ignores) keeps the parent
graph's state bounded. With ``goto`` the node returns a ``Command``; add it with
``destinations=(goto,)`` so ``get_graph()`` draws the route. The step closes over a drawing
copy of the resize graph, so ``get_graph(xray=True)`` draws it nested inside the step. It
records the messages that reached it: route the model's way to END through it too if the
last reply must be stored before the next turn.
"""

from __future__ import annotations

import asyncio
from typing import Any, Unpack

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.types import Command, Overwrite

from session_graph.integrations.binding import BindingOptions, SessionBinding
from session_graph.integrations.history_recall import DEFAULT_RECALL, HistoryRecall, known_recall, recall_view
from session_graph.integrations.turn_messages import current_turn
from session_graph.resize.graph import build_resize_graph
from session_graph.session import Session

__all__ = ["session_node", "session_pre_model_hook"]


def session_node(
    session: Session | None = None,
    *,
    messages_key: str = "messages",
    goto: str | None = None,
    history: HistoryRecall | None = DEFAULT_RECALL,
    **options: Unpack[BindingOptions],
) -> Any:
    """A graph node (sync and async) ``(state, config) -> {messages_key: Overwrite(view)}`` (or a Command).

    ``history``: automatic recall of evicted messages into the context message (see
    ``integrations.history_recall``; memo and summary modes by default); None: off.

    Example:
        >>> from langgraph.graph import StateGraph, MessagesState
        >>> builder = StateGraph(MessagesState)
        >>> _ = builder.add_node("session", session_node(Session(), goto="model"), destinations=("model",))
    """
    binding = SessionBinding(session, **options)
    # A drawing-only compile (never invoked): resizes run on the session's own graph, compiled
    # with checkpointer=False so LangGraph never checkpoints it inside this graph.
    resize_graph = build_resize_graph(
        resize_types=session.handlers.resize if session is not None else (),
        overrides=session.handlers.overrides if session is not None else None,
        checkpointer=None,
    )

    def update(current: Session) -> Any:
        out = {messages_key: Overwrite(recall_view(current, history))}
        return Command(update=out, goto=goto) if goto else out

    def session_step(state: dict[str, Any], config: RunnableConfig) -> Any:
        _ = resize_graph  # referenced so get_graph(xray=True) draws the resize graph inside this step
        return update(binding.step(state[messages_key], config, save=True))

    async def asession_step(state: dict[str, Any], config: RunnableConfig) -> Any:
        _ = resize_graph
        current = await binding.astep(state[messages_key], config, save=True)
        if known_recall(current, history) is not None:  # no search to make: no thread hop
            return update(current)
        return await asyncio.to_thread(update, current)  # recall searches the history: never on the event loop

    return RunnableLambda(session_step, afunc=asession_step, name="session_step")


def session_pre_model_hook(session: Session | None = None, *, history: HistoryRecall | None = DEFAULT_RECALL,
                           **options: Unpack[BindingOptions]) -> Any:
    """A ``pre_model_hook`` (sync and async) for LangGraph's prebuilt ``create_react_agent``.

    It keeps the state to the current turn (``messages``: ``Overwrite``; the store holds the
    rest) and hands the model the session's view (``llm_input_messages``: system prompt, memo
    or summary with the evicted messages ``history`` recalls, window within the budget).
    """
    binding = SessionBinding(session, **options)

    def update(current: Session, turn: list[Any]) -> dict[str, Any]:
        return {"messages": Overwrite(turn), "llm_input_messages": recall_view(current, history)}

    def pre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        turn = current_turn(state["messages"])
        return update(binding.step(state["messages"], config, save=len(turn)), turn)

    async def apre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        turn = current_turn(state["messages"])
        current = await binding.astep(state["messages"], config, save=len(turn))
        if known_recall(current, history) is not None:  # no search to make: no thread hop
            return update(current, turn)
        return await asyncio.to_thread(update, current, turn)  # recall searches the history: never on the event loop

    return RunnableLambda(pre_model_hook, afunc=apre_model_hook, name="pre_model_hook")
