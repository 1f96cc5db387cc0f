"""Checkpoint growth and turn time with and without the session middleware.

Run: ``python bench/bench_agents.py`` (a few minutes; ``--turns 200`` for a quick run). A
realistic conversation (each turn: a ~200-char question, a tool call, a ~0.7 kB tool result,
a ~0.6 kB answer) runs through ``create_agent`` with a ``SqliteSaver``:

- stock (no middleware), for ``--stock-turns`` turns (default 200: its checkpoints grow with
  the square of the conversation, 1,000 turns would write several GB);
- with ``SessionMiddleware`` over a JSONL ``SessionManager`` (token budget 4,000), for
  ``--turns`` turns (default 1,000);

each with LangGraph's default durability and with ``durability="exit"`` (one checkpoint per
run). Printed at turns 10, 100, 200 and 1,000: bytes stored (checkpoints, plus the session
store's own files with the middleware) / characters of the conversation so far, and the median time of the last 10 turns; then the median turn time over the last 50 turns
over that of turns 11-60 (goal <= 1.2 with the session). Goals: <= 10x with the default
durability, <= 3x with ``"exit"``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
import json
from pathlib import Path
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware

ANSWER = "The findings agree with the earlier results; the export fails on the cache key. "
RESULT = "Notes on the topic: a relevant detail about the export job and its retries. "


class _Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> _Model:
        return self


def _replies() -> Iterator[AIMessage]:
    i = 0
    while True:
        yield AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "lookup", "args": {"topic": f"topic {i}"}}])
        yield AIMessage(content=f"Answer {i}: " + (ANSWER * 8)[:590])
        i += 1


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: " + (RESULT * 10)[:690]


def _question(turn: int) -> str:
    return (f"Question {turn}: what do we know about topic {turn}, and what should we do next about it? " * 3)[:200]


def _text(messages: list[BaseMessage]) -> int:
    return sum(len(m.text) + sum(len(json.dumps(c["args"])) for c in getattr(m, "tool_calls", []) or []) for m in messages)


def _checkpoint_bytes(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        checkpoints = connection.execute("SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints").fetchone()[0]
        writes = connection.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints) + int(writes)


def run(turns: int, marks: list[int], with_session: bool, durability: str, folder: Path) -> tuple[dict[int, tuple[float, float]], list[float]]:
    name = f"{'session' if with_session else 'stock'}-{durability}"
    database = folder / f"{name}.sqlite"
    middleware: list[Any] = []
    manager: SessionManager | None = None
    if with_session:
        manager = SessionManager(folder / f"sessions-{name}")
        manager.session_factory = lambda key: Session(key).configure(limit={"tokens": 4000})
        middleware = [SessionMiddleware(manager=manager)]
    results: dict[int, tuple[float, float]] = {}
    with SqliteSaver.from_conn_string(str(database)) as saver:
        agent = create_agent(_Model(messages=_replies()), tools=[lookup], middleware=middleware, checkpointer=saver,
                             system_prompt="You are a research assistant.")
        config = {"configurable": {"thread_id": "bench"}}
        times: list[float] = []
        conversation: list[BaseMessage] = []
        seen: set[str] = set()
        for turn in range(1, turns + 1):
            t0 = time.perf_counter()
            out = agent.invoke({"messages": [HumanMessage(content=_question(turn))]}, config, durability=durability)
            times.append(time.perf_counter() - t0)
            if manager is None:  # stock: its state is the whole conversation
                for message in out["messages"]:
                    if message.id not in seen:
                        seen.add(message.id)
                        conversation.append(message)
            elif turn in marks:  # with the session its state is one turn; the session holds the conversation
                conversation = list(manager.get("bench").full_chat_history)
            if turn in marks:  # with the session, its own store's files count too
                stored = sum(f.stat().st_size for f in (folder / f"sessions-{name}").rglob("*") if f.is_file()) if manager else 0
                results[turn] = ((_checkpoint_bytes(database) + stored) / _text(conversation), statistics.median(times[-10:]))
    return results, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--stock-turns", type=int, default=200)
    args = parser.parse_args()
    marks = [m for m in (10, 100, 200, 1000) if m <= max(args.turns, args.stock_turns)]
    table: dict[tuple[bool, str], dict[int, tuple[float, float]]] = {}
    times: dict[tuple[bool, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for durability in ("async", "exit"):
            for with_session, turns in ((False, args.stock_turns), (True, args.turns)):
                key = (with_session, durability)
                table[key], times[key] = run(turns, [m for m in marks if m <= turns], with_session, durability, Path(tmp))
    print("bytes stored (checkpoints + the session store's files) / conversation characters (wall ms per turn):\n")
    print("| turn | stock, default | stock, exit | session, default | session, exit |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for mark in marks:
        cells = []
        for key in ((False, "async"), (False, "exit"), (True, "async"), (True, "exit")):
            value = table[key].get(mark)
            cells.append(f"{value[0]:.1f}x ({value[1] * 1e3:.1f} ms)" if value else "-")
        print(f"| {mark:,} | " + " | ".join(cells) + " |")
    for durability in ("async", "exit"):
        spent = times[(True, durability)]
        early, late = statistics.median(spent[10:60]), statistics.median(spent[-50:])
        print(f"\nsession, durability {durability!r}: median ms/turn over the last 50 turns ({late * 1e3:.1f}) / over turns "
              f"11-60 ({early * 1e3:.1f}) = {late / early:.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
