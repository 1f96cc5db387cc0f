"""The offline demo: replay a long conversation through two sessions and print each resize.

Run ``python -m session_graph`` (or ``session-graph``). No network, no API key: the
conversation is generated deterministically (seeded), with tool calls, images and the
odd pasted log, and replayed through a Session with the default settings and through one
with ``limit={"chars": 4000}``.
"""

from __future__ import annotations

import argparse
from collections import Counter
import random
from typing import Any

from session_graph.session import Session

__all__ = ["conversation", "main", "replay"]

_TOPICS = ["the billing export", "a flaky CI job", "the onboarding email", "cache invalidation", "the Q3 roadmap",
           "a memory leak in the worker", "the Postgres migration", "rate limits on the API"]
_ASKS = ["Can you look into {t}?", "What do you think about {t}?", "Remind me what we decided on {t}.",
         "Draft a short note about {t}.", "Is there a quick fix for {t}?"]
_REPLIES = ["Here is what I found about {t}: the main cause is configuration drift, and a rollback would fix it.",
            "On {t}: we agreed to ship the smaller change first and measure before the bigger refactor.",
            "A quick fix for {t} is to add a retry with backoff; the real fix needs a schema change.",
            "Draft: 'Team, {t} is on track; expect an update on Friday with numbers.'"]
_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def conversation(turns: int = 240, seed: int = 7) -> list[dict[str, Any]]:
    """A deterministic OpenAI-style conversation of ``turns`` user/assistant turns."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        topic = rng.choice(_TOPICS)
        ask = rng.choice(_ASKS).format(t=topic) + " " + "Some context. " * rng.randint(0, 12)
        if turn % 37 == 36:  # a pasted log: one message bigger than the whole 4,000-char limit
            ask += "\n" + "\n".join(f"2026-11-22T10:{i % 60:02d}:00 ERROR worker-{i % 7} timeout" for i in range(120))
        if turn % 11 == 5:  # an image, inline as a base64 data URL
            messages.append({"role": "user", "content": [
                {"type": "text", "text": ask},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_PIXEL * 40}"}},
            ]})
        else:
            messages.append({"role": "user", "content": ask})
        if turn % 6 == 2:  # a tool call and its result
            call_id = f"call_{turn}"
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "search_docs", "arguments": f'{{"query": "{topic}"}}'}},
            ]})
            messages.append({"role": "tool", "tool_call_id": call_id, "name": "search_docs",
                             "content": f"3 documents mention {topic}. " * rng.randint(1, 6)})
        messages.append({"role": "assistant", "content": rng.choice(_REPLIES).format(t=topic) + " Details follow." * rng.randint(0, 8)})
    return messages


def replay(session: Session, messages: list[dict[str, Any]], *, out: Any = print) -> Session:
    """Append each message, judge after each assistant reply, resize when the policy says so."""
    for message in messages:
        session.append_message(message)
        if message["role"] != "assistant" or not isinstance(message.get("content"), str):
            continue
        decision = session.judge_resize()
        if decision is None:
            continue
        session.resize()
        event = session.resize_events[-1]
        out(
            f"  turn {event.turn:4d}  {event.type:<5} {event.reason!s:<26} severity {event.severity or 0:>3}  "
            f"window {event.chars_before:>6} -> {event.chars_after:>6} chars, "
            f"{event.messages_before:>3} -> {event.messages_after:>3} msgs"
        )
    return session


def _summary(session: Session, out: Any) -> None:
    kinds = Counter(f"{e.type}/{e.reason}" for e in session.resize_events)
    largest = max((e.chars_before for e in session.resize_events), default=session.window_totals.chars)
    out(
        f"  summary: {len(session.full_chat_history)} messages kept in full, {session.turns} turns, "
        f"{len(session.resize_events)} resizes ({', '.join(f'{k} x{v}' for k, v in sorted(kinds.items()))}); "
        f"window now {session.window_totals.count} msgs / {session.window_totals.chars} chars; "
        f"largest window before a resize {largest} chars."
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m session_graph`` and the ``session-graph`` script."""
    parser = argparse.ArgumentParser(prog="session-graph", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=240, help="conversation length in turns (default 240)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated conversation")
    args = parser.parse_args(argv)
    messages = conversation(args.turns, args.seed)
    print(f"session_graph demo: {args.turns} turns, {len(messages)} messages, offline.\n")
    for title, session in (
        ("default settings (12,000 chars, every 8 turns, lite)", Session()),
        ('limit={"chars": 4000}', Session().configure(limit={"chars": 4000})),
    ):
        print(f"Session with {title}:")
        _summary(replay(session, messages), print)
        print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
