"""Checkpoint growth with and without the session middleware.

Run: ``python bench/bench_agents.py`` (about two minutes). The same 1,000-turn conversation
(each turn: a question, a tool call, its result, an answer) runs through ``create_agent``
with a ``SqliteSaver``, once as is and once with ``SessionMiddleware`` over a JSONL
``SessionManager`` (window limited to 4,000 chars, pruned to 3,000 so it resizes every few turns). At turns 10, 100 and 1,000 it prints
the checkpoint bytes stored so far, the bytes the turn added, and the time of the turn.
With the session the full history is appended once to the session store and the
checkpointed state holds only the bounded window, memo and session key.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware


class _Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> _Model:
        return self


def _replies() -> Iterator[AIMessage]:
    i = 0
    while True:
        yield AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "lookup", "args": {"topic": f"topic {i}"}}])
        yield AIMessage(content=f"Answer {i}: " + "the findings are consistent with the earlier results. " * 3)
        i += 1


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"Notes on {topic}: " + "a relevant detail. " * 6


def _checkpoint_bytes(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        checkpoints = connection.execute("SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints").fetchone()[0]
        writes = connection.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints) + int(writes)


def run(turns: int, marks: list[int], with_session: bool, folder: Path) -> dict[int, tuple[int, int, float]]:
    database = folder / ("with.sqlite" if with_session else "without.sqlite")
    middleware = []
    if with_session:
        manager = SessionManager(folder / "sessions")
        manager.session_factory = lambda key: Session(key).use_lite(chars=4000).set_settings("session.resize.prune_to_ratio", 0.75)
        middleware = [SessionMiddleware(manager=manager)]
    results: dict[int, tuple[int, int, float]] = {}
    with SqliteSaver.from_conn_string(str(database)) as saver:
        agent = create_agent(_Model(messages=_replies()), tools=[lookup], middleware=middleware, checkpointer=saver,
                             system_prompt="You are a research assistant.")
        config = {"configurable": {"thread_id": "bench"}}
        previous, recent = 0, []
        for turn in range(1, turns + 1):
            t0 = time.perf_counter()
            agent.invoke({"messages": [HumanMessage(content=f"Question {turn}: what do we know about topic {turn}?")]}, config)
            recent = [*recent[-4:], time.perf_counter() - t0]
            if turn in marks:
                size = _checkpoint_bytes(database)
                results[turn] = (size, size - previous, statistics.median(recent))
            if turn + 1 in marks:
                previous = _checkpoint_bytes(database)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    marks = [m for m in (10, 100, 1000) if m <= args.turns]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table = {flag: run(args.turns, marks, flag, folder) for flag in (False, True)}
    print(f"{'turn':>6} | {'stock: checkpoints':>19} {'added':>10} {'ms/turn':>8} | {'session: checkpoints':>21} {'added':>9} {'ms/turn':>8}")
    for mark in marks:
        (a, da, ta), (b, db, tb) = table[False][mark], table[True][mark]
        print(f"{mark:>6} | {a / 1e6:>16.1f} MB {da / 1e3:>7.0f} KB {ta * 1e3:>8.1f} | {b / 1e6:>18.1f} MB {db / 1e3:>6.0f} KB {tb * 1e3:>8.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
