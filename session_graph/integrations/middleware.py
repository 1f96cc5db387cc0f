"""SessionMiddleware: a session in front of a LangChain ``create_agent`` model, in one hook.

``wrap_model_call`` runs the agent step (record what the session does not hold yet, judge,
resize, save what is not stored yet), hands the model the session's view (the agent's system
prompt merged with the session's system prompt and the memo or summary into one system
message, which every provider accepts: the agent's own, its id, name and content blocks kept
first and unchanged (``history_recall.merged_system``), then the window within the token budget), records the
reply the moment the model returns, and, when the run has a checkpointer, cuts the agent's
``messages`` to that reply (an ``ExtendedModelResponse`` whose command removes them): the
session's store holds the rest, so every checkpoint stays the size of one turn (without one,
nothing outlives the run: no command, the state as a stock agent's). The session's key comes
from the run's config (``thread_id``): no state channel of ours for LangGraph to write and check. The save comes first, so the user's input is
durable before the model (or anything after it) can fail or be cancelled; ``save_point`` says
where a turn is saved (once durably, before the first model call; the turn's end, with its tool
calls and results, written without an fsync). One model hook, not ``before_model``
too: LangGraph then runs no extra node per model call, the largest part of what any middleware
costs a turn. ``wrap_tool_call`` (it wraps a tool's run, no node) records each tool result as it
returns and writes it at once when the tool is ``return_direct``: the run ends in the tools node
then, and no later model call would save it. A run that another middleware ends from
``after_model`` (a call-limit's ``exit_behavior="end"``) is not seen by any hook of ours: its
last messages reach the store only through a checkpointer's next turn. The async twin runs the same step, so an async agent never blocks its event
loop on the store.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
import dataclasses
import logging
from typing import Any, Unpack
import uuid

from langchain.agents.middleware import AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Command, Overwrite

from session_graph._base.ids import utc_now
from session_graph.errors import ConfigurationError
from session_graph.integrations.binding import BindingOptions, SessionBinding, run_config
from session_graph.integrations.history_recall import (
    DEFAULT_RECALL,
    HistoryRecall,
    history_tools,
    known_recall,
    merged_system,
    newest_user_text,
    plain_system,
    recall_text,
)
from session_graph.integrations.memory_tools import memory_tools
from session_graph.memory.config import MemoryConfig
from session_graph.memory.recall import format_memories, recall_or_outage
from session_graph.session import Session

__all__ = ["SessionMiddleware", "memory_tools"]

log = logging.getLogger(__name__)


class SessionMiddleware(AgentMiddleware[AgentState]):  # the agent's own state: the session key is read from the run's config
    """Put a Session (or one per thread, from a SessionManager) in front of the model.

    Args:
        session: one session for every run (on one thread: see ``share_across_threads``).
        memory: long-term memory: before each model call the ``recall_k`` memories most relevant
            to the newest user message join the system message (at most ``recall_chars``, counted
            against the token budget), and the agent gets the tools ``search_memory``,
            ``remember`` (which stores through the commit's de-duplicating apply step) and
            ``forget_memory`` (``integrations/memory_tools.py``). A memory store that is down
            (a lost database connection) never fails the turn: the model answers without
            recalled memories, a warning is logged and the failure is kept in
            ``recall_failures`` (with ``on_memory_error="raise"``: a ``StoreUnavailableError``).
        recall_k: memories recalled per model call (0: none, the tools stay).
        recall_chars: the most characters recalled memories take.
        allow_purge: ``forget_memory`` may erase a memory's past versions too when the model asks
            (off: its history is always kept).
        allow_agent_forget: ``forget_memory`` may forget the agent's own memories (cases,
            patterns), which every user of the agent shares (off: the run's user's memories only).
        history: recall from the whole history (``HistoryRecall``): before each model call the
            evicted messages most relevant to the newest user message join the system message
            (memo and summary modes; lite mode with ``HistoryRecall(lite=True)``); with
            ``HistoryRecall(tool=True)`` the agent also gets the tool ``search_history``. None: off.
        **options: ``manager`` (one session per ``thread_id``, from its store), ``key_prefix``,
            ``on_memory_error``, ``share_across_threads``: see ``SessionBinding``.
    """

    def __init__(
        self, session: Session | None = None, *, memory: MemoryConfig | None = None, recall_k: int = 5,
        recall_chars: int = 1600, history: HistoryRecall | None = DEFAULT_RECALL, allow_purge: bool = False,
        allow_agent_forget: bool = False, **options: Unpack[BindingOptions],
    ) -> None:
        super().__init__()
        if memory is not None and not isinstance(memory, MemoryConfig):
            raise ConfigurationError(f"memory must be a MemoryConfig, got {type(memory).__name__}.")
        for name, value in (("recall_k", recall_k), ("recall_chars", recall_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}.")
        self.binding = SessionBinding(session, **options)
        self.memory, self.recall_k, self.recall_chars = memory, recall_k, recall_chars
        self.recall_failures: deque[dict[str, Any]] = deque(maxlen=100)  # the newest outages of recall, newest last
        if history is not None and not isinstance(history, HistoryRecall):
            raise ConfigurationError(f"history must be a HistoryRecall or None, got {type(history).__name__}.")
        self.history = history
        self.tools = memory_tools(memory, allow_purge=allow_purge, allow_agent_forget=allow_agent_forget) if memory is not None else []
        if history is not None and history.tool:
            self.tools.extend(history_tools(self.binding, history))

    # -- one hook: the step, the view, the reply recorded, then a state of one turn -------------
    # (one wrap_model_call instead of before_model + wrap_model_call: LangGraph runs no extra
    # node per model call, which is most of what any middleware costs a turn)
    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        state, config = request.state["messages"], run_config()
        live, point = self._turn_point(state, config)
        session = self.binding.step(state, config, session=None if point["durable"] else live, **point)  # the input durable before the model
        response = handler(self._with_view(session, request, self._recalled(session, request)))
        response, replies = _new_ids(session, response, _replies(response))
        self.binding.step(replies, config, resize=False, session=session, **save_point(state, replies, answered=_answered(response)))
        return _flat(session, request, response, replies, cut=_kept(config))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        state, config = request.state["messages"], run_config()
        live, point = self._turn_point(state, config)
        session = await self.binding.astep(state, config, session=None if point["durable"] else live, **point)
        recalled = self._known(session)  # no search to make: no thread hop
        if recalled is None:
            recalled = await asyncio.to_thread(self._recalled, session, request)  # searches: never on the event loop
        response = await handler(self._with_view(session, request, recalled))
        response, replies = _new_ids(session, response, _replies(response))
        await self.binding.astep(replies, config, resize=False, session=session, **save_point(state, replies, answered=_answered(response)))
        return _flat(session, request, response, replies, cut=_kept(config))

    # -- tool results: recorded as they return; written when the run ends in the tools node ------
    # (wrap_tool_call wraps the tool's execution: no graph node; a run whose tools are all
    # return_direct ends after them without another model call, so their results are written here)
    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        messages = _tool_messages(result)
        if messages:
            self.binding.step(_with_call(request, messages), resize=False, session=self._held(), **_tool_point(request))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        messages = _tool_messages(result)
        if messages:
            await self.binding.astep(_with_call(request, messages), resize=False, session=self._held(), **_tool_point(request))
        return result

    def _turn_point(self, state: list[BaseMessage], config: RunnableConfig) -> tuple[Session | None, dict[str, Any]]:
        """The session the run's earlier steps used, and where a model call saves (``save_point``);
        an input that session holds but no store does (its save failed; the caller retries it) is
        still the turn's start: saved durably before the model call."""
        live = self.binding.live(self.binding.key(config))
        point = save_point(state, session=live)
        manager = self.binding.manager
        if not point["durable"] and live is not None and manager is not None:
            history = live.full_chat_history
            if any(isinstance(m, HumanMessage) for m in history[len(history) - manager.unsaved(live):]):
                point = {"save": True, "durable": True}
        return live, point

    def _held(self) -> Session | None:
        """The session the run's model call used (a tool step's: no store look-up), by the run's key."""
        return self.binding.live(self.binding.key())

    def _known(self, session: Session) -> str | None:
        """``_recalled``'s answer when it makes no search (no memory recall; history recall off or
        answered by the turn's earlier search), else None."""
        return known_recall(session, self.history) if self.memory is None or not self.recall_k else None

    def _recalled(self, session: Session, request: ModelRequest | None = None) -> str:
        """The memories and evicted messages recalled for the newest user message, as prompt text
        ("" when none): memories of the run's user and agent (``config["configurable"]`` or the
        runtime context), else the config's."""
        earlier = recall_text(session, self.history)
        if self.memory is None or not self.recall_k:
            return earlier
        query = newest_user_text(session)
        runtime = getattr(request, "runtime", None)
        memory = self.memory.for_run(context=getattr(runtime, "context", None))
        values, outage = recall_or_outage(memory, query, self.recall_k)
        if outage is not None:
            if self.binding.on_memory_error == "raise":
                raise outage
            log.warning("session %s: recall skipped, the memory store is unavailable; the model answers without "
                        "recalled memories: %s", session.id, outage)
            self.recall_failures.append({"at": utc_now(), "session": session.id, "user": memory.user, "error": str(outage)})
        found = format_memories(values, self.recall_chars)
        return "\n\n".join(p for p in (f"Relevant long-term memories:\n{found}" if found else "", earlier) if p)

    @staticmethod
    def _with_view(session: Session, request: ModelRequest, recalled: str = "") -> ModelRequest:
        own = session.tokens_of(request.system_message) if request.system_message is not None else 0
        own += session.tokens_of(plain_system(recalled)) if recalled else 0  # made and counted once per text
        view = session.view(outside_tokens=own).messages  # the agent's system prompt counts against the budget
        lead = 0
        while lead < len(view) and isinstance(view[lead], SystemMessage):
            lead += 1
        # the agent's message first, its blocks and fields kept; plain text: one message per text, reused
        system = merged_system(request.system_message, view[:lead], recalled)
        return _override(request, messages=view[lead:], system_message=system)  # a slice: a list of its own


def _override(request: ModelRequest, **changes: Any) -> ModelRequest:
    """``request.override(**changes)``: a new request, the old one left as it was. A
    ``ModelRequest`` itself (not a subclass, which may override ``override``) is copied field by
    field without ``dataclasses.replace``, whose ``__init__`` sets each field through the
    deprecation warning of ``ModelRequest.__setattr__`` (nine filtered warnings a model call)."""
    if type(request) is not ModelRequest or not changes.keys() <= _NAMES:
        return request.override(**changes)
    try:
        held = request.__dict__  # its fields only, as replace() copies them (nothing cached beside them)
        values = {name: changes[name] if name in changes else held[name] for name in _FIELDS}
    except (AttributeError, KeyError):  # a field its instance does not hold (a class default, slots): override reads it
        return request.override(**changes)
    copied = object.__new__(ModelRequest)
    copied.__dict__.update(values)
    return copied


_FIELDS = tuple(field.name for field in dataclasses.fields(ModelRequest))
_NAMES = frozenset(_FIELDS)


def _flat(session: Session, request: ModelRequest, response: Any, replies: list[BaseMessage],
          cut: bool = True) -> ModelResponse | ExtendedModelResponse:
    """The model's response, and the agent's state cut to it when the run has a checkpointer
    (``cut``): the store holds everything before it (recorded and written by the step above), so
    every checkpoint stays the size of one turn; tools read the reply's calls and add their results
    after it. A run without a checkpointer keeps nothing between runs: the state is left as a
    stock agent's (the run's result holds the turn's messages) and LangGraph applies no command.

    The cut removes the messages the state held by id rather than overwriting ``messages``: an
    ``Overwrite`` would discard everything else written in the model's step (a reply another
    middleware edited, a message one adds through its own command) and fail the run beside a
    middleware that overwrites too. Only when the state holds a message without an id, or a
    malformed tool call LangChain answers in the step itself, is the state overwritten. (A
    middleware inside this one whose own command removes the same messages in that step, e.g.
    ``RemoveMessage(REMOVE_ALL_MESSAGES)``, makes LangGraph refuse the second removal.)"""
    held = request.state["messages"]
    model_response = response if isinstance(response, ModelResponse) else ModelResponse(result=replies)
    if not held or not cut:  # nothing to cut: no command for LangGraph to apply
        return model_response
    update = {"messages": [RemoveMessage(id=m.id) for m in held] if _removable(held) else Overwrite(replies)}
    return ExtendedModelResponse(model_response=model_response, command=Command(update=update))


def _kept(config: RunnableConfig) -> bool:
    """Whether the run keeps its state between runs (a checkpointer, the agent's own or its parent
    graph's, which LangGraph puts in each task's config): only then does the cut keep anything small."""
    return bool((config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER))


def _removable(held: list[BaseMessage]) -> bool:
    """Whether removing ``held`` by id leaves nothing of them: every one has an id, and no
    malformed tool call is unanswered (the model's step adds an answer of its own to those)."""
    answered = {m.tool_call_id for m in held if isinstance(m, ToolMessage)}
    return all(m.id for m in held) and not any(
        call.get("id") is not None and call.get("id") not in answered
        for m in held if isinstance(m, AIMessage) for call in m.invalid_tool_calls
    )


def _tool_messages(result: Any) -> list[BaseMessage]:
    """The tool results a tool call returned (a ToolMessage, those a Command's update adds, or
    those of a list of both, which a tool may return: one of them answers its call)."""
    messages: list[BaseMessage] = []
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, Command):
            update = item.update if isinstance(item.update, dict) else {}
            messages.extend(m for m in update.get("messages") or [] if isinstance(m, ToolMessage))
        elif isinstance(item, ToolMessage):
            messages.append(item)
    for message in messages:  # the id the agent's state keeps (add_messages keeps a given one): recorded once
        message.id = message.id or str(uuid.uuid4())
    return messages


def _with_call(request: Any, results: list[BaseMessage]) -> list[BaseMessage]:
    """The tool's results after the state's newest reply (the one that called the tool; an uncut
    state's older messages were recorded by the model call's step, and are not looked up again): a run
    resumed by another process from a checkpointer (paused before the tools) holds that reply in
    its checkpoint only, so it is recorded before its results (``record`` skips what the session
    holds already; one without an id cannot be told, so it is left to the next model call's step)."""
    held = (request.state or {}).get("messages") if isinstance(request.state, dict) else None
    if not held:
        return results
    start = len(held) - 1  # from the reply that called the tool on: the model call's step recorded what came before it
    while start > 0 and not isinstance(held[start], AIMessage):
        start -= 1
    return [*(m for m in held[start:] if isinstance(m, BaseMessage) and m.id), *results]


def _tool_point(request: Any) -> dict[str, Any]:
    """A tool result is recorded in memory; a ``return_direct`` tool's is written too (no fsync):
    the run ends after the tools node when every tool it ran is return_direct, and no later
    model call saves it. (Parallel return_direct calls each write: the last holds them all.)"""
    tool = getattr(request, "tool", None)
    return {"save": True, "durable": False} if getattr(tool, "return_direct", False) else {"save": False}


def _replies(response: Any) -> list[BaseMessage]:
    messages = response.result if isinstance(response, ModelResponse) else [response]
    return [m for m in messages if isinstance(m, BaseMessage)]


def _new_ids(session: Session, response: Any, replies: list[BaseMessage]) -> tuple[Any, list[BaseMessage]]:
    """The response with each reply whose id the session already holds given an id of its own.

    A reply is new, whatever its id: a model or a cache that repeats ids (LangChain's LLM cache
    answers a repeated prompt with the first answer, id and all) made a reply that was taken for
    the stored message and never recorded, and the cut of the state by id removed it with the
    message it shared its id with. Renamed here, the store and the agent's state hold the same copy.
    """
    repeated = [m for m in replies if m.id and m in session]  # each reply looked up once
    if not repeated:
        return response, replies
    renamed = {id(m): m.model_copy(update={"id": uuid.uuid4().hex}) for m in repeated}
    if isinstance(response, ModelResponse):
        response = dataclasses.replace(response, result=[renamed.get(id(m), m) for m in response.result])
    elif id(response) in renamed:
        response = renamed[id(response)]
    return response, [renamed.get(id(m), m) for m in replies]


def _answered(response: Any) -> bool:
    """Whether the model's response is the agent's structured answer (``response_format``): the turn ends."""
    return isinstance(response, ModelResponse) and response.structured_response is not None


def save_point(
    state: list[BaseMessage], replies: list[BaseMessage] | None = None, *, answered: bool = False, session: Session | None = None,
) -> dict[str, Any]:
    """Where an agent turn is saved: the ``save``/``durable`` options of a step. One durable
    write (one fsync on the JSONL store) per turn, and every message in the store before the
    agent's state drops it (a flattened state keeps one turn):

    - before the first model call of a turn (the state holds the user's new input: a
      ``HumanMessage`` that ``session``, the one the run's earlier steps used, does not hold
      yet; any ``HumanMessage`` without it): a durable
      save that carries the input (so a model call that fails never loses it; see issue 19),
      the previous turn's replies and any resize the step just made;
    - when a reply ends the turn (no tool calls, or ``answered``: the structured answer of a
      ``response_format``, whose tool call ends the agent): a write without fsync, so the answer outlives
      the process; the next turn's durable save makes it durable against a power loss too;
    - when a reply calls tools: a write without fsync only if the cut that follows would drop
      a message not stored yet (more unsaved than the reply: a model call after tool results);
    - before a later model call of the turn: no write unless a resize did more than a lite
      prune (``integrations/pruned.py``: the next write carries a prune; ``save`` = the
      state's length: every unsaved message, the tool call and its results, is still in the
      agent's state, so in its checkpoint, as in a stock agent's; the reply's write above
      stores them before the cut drops them). A one-tool turn thus writes twice: the input
      (durable) and the answer with the tool call and its results.
    """
    if replies is None:
        starts = any(isinstance(m, HumanMessage) and (session is None or not (m.id and m in session)) for m in state)
        return {"save": True, "durable": True} if starts else {"save": len(state), "durable": False}
    ended = answered or any(isinstance(m, AIMessage) and not m.tool_calls for m in replies)
    return {"save": True, "durable": False} if ended else {"save": len(replies), "durable": False}
