"""The direct executor (``resize/direct.py``) against LangGraph's Pregel loop on the same graphs.

Many random sessions (lite, memo and summary modes; char, message and token limits; fake chat
models, some failing or answering prose; deep folds in several chunks; custom policies and
resize handlers, some failing) are run twice, once with every resize through Pregel and once with
every resize through the direct executor, and what a caller sees must be the same: each
``resize()``'s window or error, the state, the trace records (timings aside) and the events.
Then: which runs ``select`` sends to Pregel (an override, a user's handler, callbacks, tracing,
the switch).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
import dataclasses
import json
import random
import re
from typing import Any
from unittest.mock import MagicMock

from conftest import BrokenModel, fake_model, memo_reply
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.context import tracing_v2_enabled
from langgraph.graph.state import CompiledStateGraph
import pytest
from resize_util import executor_choices, pruning

from session_graph import Session
from session_graph.resize import direct, session_run
from session_graph.resize import run as run_module
from session_graph.resize.direct import FORCE_PREGEL_ENV, plan_of

SEEDS = range(36)


# -- the two executors, counted ------------------------------------------------------------
@pytest.fixture
def executors(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], dict[str, int]]:
    """``use("direct" | "pregel")``: every resize from then on through that executor; returns the counts."""
    counts = {"direct": 0, "pregel": 0, "unplanned": 0}
    real_stream, real_astream, real_execute = CompiledStateGraph.stream, CompiledStateGraph.astream, run_module.execute

    def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["pregel"] += 1
        return real_stream(self, *args, **kwargs)

    def astream(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["pregel"] += 1
        return real_astream(self, *args, **kwargs)

    def execute(*args: Any, **kwargs: Any) -> Any:
        counts["direct"] += 1
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(CompiledStateGraph, "stream", stream)
    monkeypatch.setattr(CompiledStateGraph, "astream", astream)
    monkeypatch.setattr(run_module, "execute", execute)

    def use(which: str) -> dict[str, int]:
        def chosen(graph: CompiledStateGraph, handlers: Any, *, sync: bool) -> Any:
            if which == "pregel":
                return None
            plan = plan_of(graph, sync=sync)
            counts["unplanned"] += plan is None
            return plan

        monkeypatch.setattr(session_run, "select", chosen)
        return counts

    return use


# -- a random session and its conversation ------------------------------------------------
def _memo_model(rng: random.Random) -> Any:
    replies = [memo_reply({"facts": [f"fold {n}"], "likes": rng.choice(["tea", "coffee"])}) for n in range(rng.randint(2, 6))]
    if rng.random() < 0.4:  # a provider that sometimes answers prose
        replies.insert(rng.randrange(len(replies) + 1), "not json at all")
    return fake_model(*replies)


def _summary_model(rng: random.Random) -> Any:
    replies = [f"Overview: fold {n} of the export talk, order 4821{n} and the DHL invoice." for n in range(rng.randint(2, 6))]
    if rng.random() < 0.3:
        replies.insert(rng.randrange(len(replies) + 1), "")
    return fake_model(*replies)


def build(seed: int) -> tuple[Session, list[tuple[str, Any]]]:
    """A session configured from ``seed`` and the steps to run on it (appends and resizes)."""
    rng = random.Random(seed)
    mode = rng.choice(["lite", "memo", "summary"])
    limit = rng.choice([{"chars": rng.randint(300, 1500)}, {"messages": rng.randint(4, 14)}, {"tokens": rng.randint(150, 600)}])
    model: Any = None
    if mode == "memo":
        model = BrokenModel(messages=iter([AIMessage(content="never")])) if rng.random() < 0.15 else _memo_model(rng)
    elif mode == "summary":
        model = BrokenModel(messages=iter([AIMessage(content="never")])) if rng.random() < 0.15 else _summary_model(rng)
    session = Session(f"diff-{seed}", model=model).configure(mode=mode, limit=limit, every_n_turns=rng.choice([0, 3, 5]))  # type: ignore[arg-type]
    if mode != "lite":
        session.set_settings("session.memo.chunk_tokens", rng.choice([30, 60, 120]))
    if rng.random() < 0.25:
        every = rng.randint(2, 4)
        calls = iter(range(10**6))

        def policy(full: list[BaseMessage], current: list[BaseMessage], settings: Any) -> Any:
            n = next(calls)
            if n % every:
                return None
            return rng.choice([{"type": "lite", "reason": "custom"}, {"type": "deep", "reason": "custom", "severity": 7}, None])

        session.set_policy_handler(policy)
    trims = rng.random() < 0.2
    if trims:
        def trim(full: list[BaseMessage], current: list[BaseMessage], memo: dict[str, Any], settings: Any) -> Any:
            if len(current) % 5 == 0:
                return None  # a broken handler: HandlerResultError, the state untouched
            return full, current[len(current) // 2:], {**memo, "trimmed": len(current)}

        session.set_resize_handlers("trim", trim)
    steps: list[tuple[str, Any]] = []
    for turn in range(rng.randint(12, 30)):
        words = 3 + rng.randint(0, 40)
        steps.append(("append", HumanMessage(content=f"question {turn} order {48000 + turn} " + "word " * words, id=f"{seed}-q{turn}")))
        if rng.random() < 0.3:  # a tool call and its result, kept together by every prune
            call = {"name": "lookup", "args": {"order": turn}, "id": f"{seed}-c{turn}"}
            steps.append(("append", AIMessage(content="", tool_calls=[call], id=f"{seed}-t{turn}")))
            steps.append(("append", ToolMessage(content="found " * rng.randint(1, 20), tool_call_id=call["id"], id=f"{seed}-r{turn}")))
        steps.append(("append", AIMessage(content=f"answer {turn} " + "text " * (words // 2), id=f"{seed}-a{turn}")))
        roll = rng.random()
        if roll < 0.1:
            steps.append(("resize", rng.choice(["lite", "deep", True])))
        elif roll < 0.15 and trims:
            steps.append(("resize", "trim"))
        elif roll < 0.18:
            steps.append(("resize", "nonexistent"))
        else:
            steps.append(("judge", None))
    return session, steps


def _message(m: BaseMessage) -> tuple[Any, ...]:
    return (m.type, m.id, m.content, getattr(m, "tool_calls", None), getattr(m, "tool_call_id", None), m.additional_kwargs.get("tool_calls"))


def _ids_aside(text: str | None) -> str | None:
    """A model reply's run id (``lc_run--<uuid>``, new on every call, whichever executor) aside."""
    return None if text is None else re.sub(r"lc_run--[0-9a-f-]+", "lc_run--<id>", text)


def _error(error: BaseException) -> tuple[str, str | None]:
    return type(error).__name__, _ids_aside(str(error))


def run_steps(session: Session, steps: list[tuple[str, Any]], *, use_async: bool) -> Iterator[Any]:
    """What a caller sees of each step."""
    for kind, arg in steps:
        if kind == "append":
            session.append_message(arg)
            continue
        force = arg if kind == "resize" else False
        if kind == "judge":
            decision = session.judge_resize()
            yield ("judged", decision)
            if not decision:
                continue
        try:
            window = asyncio.run(session.async_resize(force)) if use_async else session.resize(force)
        except Exception as error:  # the caller's view: the error, and the state as it stayed
            notes = [note.split(" and id ")[0] for note in getattr(error, "__notes__", ())]
            yield ("failed", _error(error), notes, [m.id for m in session.current_chat_history])
        else:
            yield ("resized", [_message(m) for m in window])


def snapshot(session: Session) -> dict[str, Any]:
    state = session._state
    records = [dataclasses.replace(r, at="", node_ms=tuple(0.0 for _ in r.node_ms), total_ms=0.0, error=_ids_aside(r.error))
               for r in session.trace]
    return {
        "full": [_message(m) for m in state.full_chat_history],
        "window": [_message(m) for m in state.current_chat_history],
        "memo": json.dumps(state.memo, sort_keys=True, default=str),
        "counters": (state.turns, state.last_resize_turn, state.memo_cursor, sorted(state.memo_ahead), state.archived_through),
        "fold_records": json.dumps(state.fold_records, sort_keys=True, default=str),
        "trace": records,
        "events": [dataclasses.replace(e, error=_ids_aside(e.error)) for e in session.resize_events],
        "view": [_message(m) for m in session.view()],
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_direct_and_pregel_runs_are_the_same_for_a_caller(seed: int, executors: Callable[[str], dict[str, int]]) -> None:
    use_async = seed % 3 == 0
    seen: dict[str, Any] = {}
    for which in ("pregel", "direct"):
        counts = executors(which)
        before = dict(counts)
        session, steps = build(seed)
        seen[which] = (list(run_steps(session, steps, use_async=use_async)), snapshot(session))
        ran = counts[which] - before[which]
        other = "direct" if which == "pregel" else "pregel"
        assert counts[other] == before[other] and counts["unplanned"] == 0, "every run went through the executor under test"
        seen[which + "_runs"] = ran
    assert seen["pregel"][0] == seen["direct"][0]
    assert seen["pregel"][1] == seen["direct"][1]
    assert seen["pregel_runs"] == seen["direct_runs"] > 0


def test_the_random_sessions_cover_what_they_claim(executors: Callable[[str], dict[str, int]]) -> None:
    """Not vacuous: the seeds hold folds in several chunks, model failures, handler errors and prunes."""
    executors("direct")
    kinds: set[str] = set()
    for seed in SEEDS:
        session, steps = build(seed)
        for step in run_steps(session, steps, use_async=False):
            if step[0] == "failed":
                kinds.add(step[1][0])
        for record in session.trace:
            kinds.add(f"route:{'>'.join(record.route)}")
            if record.route.count("memo_update") >= 2:
                kinds.add("chunks")
    assert {"MemoUpdateError", "HandlerResultError", "UnknownResizeTypeError", "chunks"} <= kinds
    assert {"route:judge>lite_prune", "route:judge>summary_fold>lite_prune", "route:judge>trim"} <= kinds


# -- which runs go without Pregel ----------------------------------------------------------
@pytest.fixture
def chosen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run's ``select`` chose the direct executor."""
    return executor_choices(monkeypatch)


def test_a_plain_unobserved_run_goes_direct_sync_and_async(chosen: list[bool]) -> None:
    session = pruning(Session().use_lite(messages=6))
    session.resize()
    asyncio.run(pruning(Session().use_lite(messages=6)).async_resize())
    memo = pruning(Session(model=fake_model(memo_reply({"facts": ["x"]}))).use_memo(messages=6))
    memo.resize()
    assert chosen == [True, True, True]


def test_a_users_node_or_handler_on_the_graph_selects_pregel(chosen: list[bool]) -> None:
    overridden = pruning(Session().use_lite(messages=6))
    overridden.override_node("lite_prune", lambda state: {"current_chat_history": state.current_chat_history[-4:]})
    overridden.resize()
    policy = pruning(Session().use_lite(messages=6)).set_policy_handler(lambda full, current, settings: {"type": "lite"})
    policy.resize()
    handler = pruning(Session().use_lite(messages=6))
    handler.set_resize_handlers("lite", lambda full, current, memo, settings: (full, current[-4:], memo))
    handler.resize()
    memo = pruning(Session(memo_update_handler=lambda memo, messages, attachments, settings: memo).use_memo(messages=6))
    memo.resize()
    assert chosen == [False, False, False, False]
    unrelated = pruning(Session().use_lite(messages=6))  # an override of a node the lite graph does not hold
    unrelated.override_node("summary_fold", lambda state: None)
    unrelated.resize()
    assert chosen[-1] is True


class _Seen(BaseCallbackHandler):
    def __init__(self) -> None:
        self.chains = 0

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self.chains += 1


def test_callbacks_tracing_or_the_switch_select_pregel(chosen: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _Seen()
    inside = RunnableLambda(lambda _: pruning(Session().use_lite(messages=6)).resize())
    inside.invoke(None, config={"callbacks": [seen]})  # an enclosing run's callbacks: they see the resize as a child run
    assert chosen == [False] and seen.chains >= 2
    RunnableLambda(lambda _: pruning(Session().use_lite(messages=6)).resize()).invoke(None)  # an unobserved enclosing run
    assert chosen[-1] is True
    observed = fake_model(memo_reply({"facts": ["x"]}))
    observed.callbacks = [_Seen()]
    pruning(Session(model=observed).use_memo(messages=6)).resize()  # the model's own callbacks
    assert chosen[-1] is False
    monkeypatch.setenv(FORCE_PREGEL_ENV, "pregel")
    pruning(Session().use_lite(messages=6)).resize()
    assert chosen[-1] is False
    monkeypatch.delenv(FORCE_PREGEL_ENV)
    assert direct.unobserved()
    with tracing_v2_enabled(project_name="never-sent", client=MagicMock()):  # LangSmith on (as LANGSMITH_TRACING=true): Pregel
        assert not direct.unobserved()


def test_the_recursion_limit_and_a_bad_update_stop_a_run_as_pregel_does() -> None:
    from langgraph.graph import END, START, StateGraph

    from session_graph._base.flow import drive
    from session_graph.resize.state import SessionState

    def outcome(graph: Any, limit: int, *, pregel: bool) -> Any:
        values: dict[str, Any] = {"id": "s", "full_chat_history": [], "current_chat_history": [], "memo": {}, "settings": None}
        try:
            if pregel:
                for step in graph.stream(dict(values), {"recursion_limit": limit}, stream_mode="updates"):
                    for update in step.values():
                        values.update(update or {})
            else:
                drive(direct.execute(plan_of(graph, sync=True), values, None, limit))  # type: ignore[arg-type]
        except Exception as error:
            return type(error).__name__, str(error), [note.split(" and id ")[0] for note in getattr(error, "__notes__", ())]
        return values["turns"]

    for loops in (1, 2, 4):
        builder = StateGraph(SessionState)
        builder.add_node("count", lambda state: {"turns": state.turns + 1, "unknown": 1})  # a key that is no field: dropped
        builder.add_edge(START, "count")
        builder.add_conditional_edges("count", (lambda n: lambda state: "again" if state.turns < n else "done")(loops),
                                      {"again": "count", "done": END})
        graph = builder.compile()
        for limit in range(1, 7):
            assert outcome(graph, limit, pregel=False) == outcome(graph, limit, pregel=True), (loops, limit)
    bad = StateGraph(SessionState)
    bad.add_node("bad", lambda state: ["not", "a", "dict"])
    bad.add_edge(START, "bad")
    bad.add_edge("bad", END)
    graph = bad.compile()
    assert outcome(graph, 5, pregel=False) == outcome(graph, 5, pregel=True)
    assert outcome(graph, 5, pregel=False)[0] == "InvalidUpdateError"

