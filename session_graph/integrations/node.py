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
import uuid

from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.types import Command, Overwrite

from session_graph.integrations.binding import BindingOptions, SessionBinding
from session_graph.integrations.history_recall import DEFAULT_RECALL, HistoryRecall, known_recall, recall_view
from session_graph.integrations.turn_messages import current_turn
from session_graph.resize.graph import build_resize_graph
from session_graph.session import Session

__all__ = ["session_model_hooks", "session_node", "session_pre_model_hook"]


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
    or summary with the evicted messages ``history`` recalls, window within the budget). Before
    the first model call of a turn it saves the input, durably (a model call that fails never
    loses it).

    A pre-model hook never sees the model's reply: the last reply of a turn is recorded by the
    next turn's hook, from the agent's state, so without a checkpointer it is never recorded,
    and with one it is in the store only once the next turn starts (a process that dies in
    between keeps it only in a durable checkpointer). ``session_model_hooks`` gives this hook
    with a ``post_model_hook`` that records and writes each reply as the model gives it.
    """
    return session_model_hooks(session, history=history, **options)[0]


def session_model_hooks(session: Session | None = None, *, history: HistoryRecall | None = DEFAULT_RECALL,
                        **options: Unpack[BindingOptions]) -> tuple[Any, Any]:
    """``(pre_model_hook, post_model_hook)`` over one session binding, for ``create_react_agent``.

    The pre-model hook is ``session_pre_model_hook``'s. The post-model hook records and writes a
    reply that ends the turn (no tool calls; written without an fsync, as the middleware writes an
    answer: it outlives the process, and the next turn's durable save makes it durable against a
    power loss too); a reply that calls tools is left to the agent's state, recorded with its
    results by the next model call's hook. A turn that ends on a ``return_direct`` tool's result
    is seen by no hook: without a checkpointer, that turn's call and result are not stored. The
    post-model hook changes nothing in the agent's state but a reply's id the session holds.

    Example:
        >>> from langgraph.prebuilt import create_react_agent  # doctest: +SKIP
        >>> pre, post = session_model_hooks(Session())
        >>> agent = create_react_agent(llm, tools, pre_model_hook=pre, post_model_hook=post)  # doctest: +SKIP
    """
    binding = SessionBinding(session, **options)

    def update(current: Session, turn: list[Any]) -> dict[str, Any]:
        return {"messages": Overwrite(turn), "llm_input_messages": recall_view(current, history)}

    def before(turn: list[Any]) -> dict[str, Any]:
        """The first model call of a turn saves its input durably; a later one leaves the write
        to the reply's hook or the next turn (``save``: the turn is in the agent's state)."""
        first = not any(isinstance(m, AIMessage) for m in turn)
        return {"save": True, "durable": True} if first else {"save": len(turn)}

    def pre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        turn = current_turn(state["messages"])
        return update(binding.step(state["messages"], config, **before(turn)), turn)

    async def apre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        turn = current_turn(state["messages"])
        current = await binding.astep(state["messages"], config, **before(turn))
        if known_recall(current, history) is not None:  # no search to make: no thread hop
            return update(current, turn)
        return await asyncio.to_thread(update, current, turn)  # recall searches the history: never on the event loop

    def ends(messages: list[Any]) -> bool:
        """Whether the reply ends the turn (no tool calls). A reply calling tools is left to the
        agent's state and recorded with its results by the next model call's pre-model hook: no
        hook sees a ``return_direct`` tool's result, so recorded here, the call was stored
        without it (a split pair) when no checkpointer gave the next turn the state."""
        last = messages[-1] if messages else None
        return not (isinstance(last, AIMessage) and last.tool_calls)

    def own_id(messages: list[Any], config: RunnableConfig) -> tuple[list[Any], dict[str, Any]]:
        """The reply with an id of its own when the session holds its id for another message (a
        cache or model that repeats ids: taken for the stored message, it was never recorded;
        as the middleware's ``_new_ids``), and the state update that swaps it in."""
        reply = messages[-1] if messages else None
        if reply is None or (isinstance(reply, AIMessage) and not reply.id):
            return messages, {}
        session = binding.live(binding.key(config))  # the run's key looked up once
        if not isinstance(reply, AIMessage):
            return _in_place(session, messages)
        if session is None or reply not in session:
            return messages, {}
        last = session.full_chat_history[-1]
        if last.id == reply.id and last.content == reply.content and getattr(last, "tool_calls", None) == reply.tool_calls:
            return messages, {}  # this very reply, recorded by a run of this hook that did not finish (a resume)
        copy = reply.model_copy(update={"id": uuid.uuid4().hex})
        return [*messages[:-1], copy], {"messages": [RemoveMessage(id=reply.id), copy]}

    def _in_place(session: Session | None, messages: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """A reply that repeated the id of an earlier reply of this turn (a model or proxy giving
        every reply one id): ``add_messages`` put it in that reply's place, so the turn lost its
        tool call (and ended with a tool result, the model called again). The recorded reply is
        put back and the new one appended with an id of its own."""
        if session is None:
            return messages, {}
        start = len(messages) - len(current_turn(messages))
        for index in range(len(messages) - 1, start - 1, -1):
            message = messages[index]
            position = session._ledger.held_position(message.id) if isinstance(message, AIMessage) and message.id else None
            if position is None:
                continue
            held = session.full_chat_history[position]
            if held.content == message.content and getattr(held, "tool_calls", None) == message.tool_calls:
                return messages, {}  # the newest reply of this turn is the one recorded: nothing replaced
            copy = message.model_copy(update={"id": uuid.uuid4().hex})
            fixed = [*messages[:index], held, *messages[index + 1 :], copy]
            return fixed, {"messages": [held, copy]}
        return messages, {}

    def post_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages, change = own_id(state["messages"], config)
        if ends(messages):
            binding.step(messages, config, resize=False, save=True, durable=False)
        return change

    async def apost_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages, change = own_id(state["messages"], config)
        if ends(messages):
            await binding.astep(messages, config, resize=False, save=True, durable=False)
        return change

    return (RunnableLambda(pre_model_hook, afunc=apre_model_hook, name="pre_model_hook"),
            RunnableLambda(post_model_hook, afunc=apost_model_hook, name="post_model_hook"))
