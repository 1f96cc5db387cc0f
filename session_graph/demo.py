"""The offline demo: one generated conversation through four sessions, one line per resize.

Run ``python -m session_graph`` (or ``session-graph demo``). No network, no API key: the
conversation is generated deterministically (seeded), with tool calls, images and the odd
pasted log; the memo and summary "models" are scripted offline chat models. Sections: lite
(prune to a char limit), memo (a model folds what leaves the window), a token budget, and
summary mode. ``--plot out.png`` writes the four windows' plots (needs matplotlib).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import json
import random
import re
import sys
import textwrap
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from session_graph.display.plots import check_figure_path
from session_graph.errors import ConfigurationError, MissingDependencyError
from session_graph.resize.trace import TraceRecord
from session_graph.session import Session

__all__ = ["ScriptedModel", "add_arguments", "conversation", "main", "replay", "run"]

_TOPICS = ["the billing export", "a flaky CI job", "the onboarding email", "cache invalidation", "the Q3 roadmap",
           "a memory leak in the worker", "the Postgres migration", "rate limits on the API"]
_ASKS = ["Can you look into {t}?", "What do you think about {t}?", "Remind me what we decided on {t}.",
         "Draft a short note about {t}.", "Is there a quick fix for {t}?"]
_REPLIES = ["Here is what I found about {t}: the main cause is configuration drift, and a rollback would fix it.",
            "On {t}: we agreed to ship the smaller change first and measure before the bigger refactor.",
            "A quick fix for {t} is to add a retry with backoff; the real fix needs a schema change.",
            "Draft: 'Team, {t} is on track; expect an update on Friday with numbers.'"]
_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
_SHOWN = 6  # resize lines per section; the rest are counted


def conversation(turns: int = 120, seed: int = 7) -> list[dict[str, Any]]:
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


class ScriptedModel(BaseChatModel):
    """An offline chat model for the demo: it reads the topics in the transcript it is sent
    and answers a memo (``{"memo": ...}``) or a structured summary, as a real model would."""

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = "\n".join(m.text for m in messages)
        topics = sorted({t for t in _TOPICS if t in prompt})
        calls = len(re.findall(r"-> \"?search_docs", prompt))  # a quoted transcript quotes the name
        if '{"memo"' in prompt:
            previous = re.search(r"Current memo: (\{.*\})", prompt)
            memo = json.loads(previous.group(1)).get("memo", {}) if previous else {}
            memo["topics"] = sorted(set(memo.get("topics", [])) | set(topics))
            memo["doc_searches"] = memo.get("doc_searches", 0) + calls
            text = json.dumps({"memo": memo})
        else:  # like a real model, it says what the new messages added (the fold is checked for that)
            fed = prompt.split("New messages:", 1)[-1]
            new = sorted({t for t in _TOPICS if t in fed})
            pasted = f"- pasted: {' '.join(fed.split()[:12])}\n" if len(fed) > 2000 else ""  # a long paste: what it opens with
            text = (f"Overview: a team chat about {len(topics)} work topics.\nKey facts and decisions:\n"
                    + "".join(f"- {t}: discussed\n" for t in topics[:4]) + pasted + f"- latest: {', '.join(new) or 'small talk'}, "
                    f"{calls} document searches\nUser intent: keep projects moving\nOpen tasks:\n- follow up")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    @property
    def _llm_type(self) -> str:
        return "session-graph-demo-scripted"


def replay(session: Session, messages: list[dict[str, Any]]) -> Session:
    """Append each message, judge after each assistant reply, resize when the policy says so."""
    for message in messages:
        session.append_message(message)
        if message["role"] == "assistant" and isinstance(message.get("content"), str) and session.judge_resize():
            session.resize()
    return session


def _why(record: TraceRecord, session: Session) -> str:
    limits = session.settings.resolved()
    if record.reason == "every_n_turns":
        return f"every {limits.every_n_turns} turns"
    if record.reason == "max_keep_messages_count":
        return f"over {limits.messages} messages"
    return f"over {limits.tokens:,} tokens" if limits.tokens else f"over {limits.chars:,} chars"


def _line(record: TraceRecord, session: Session) -> str:
    tokens = bool(session.settings.resolved().tokens)
    before, after = (record.tokens_before, record.tokens_after) if tokens else (record.chars_before, record.chars_after)
    unit = "tokens" if tokens else "chars"
    line = (f"  turn {record.turn:>3}  {_why(record, session):<18} window {record.messages_before:>2} -> {record.messages_after:>2} msgs, "
            f"{before:>5,} -> {after:>5,} {unit}")
    if record.model_calls:
        line += f"; folded {record.folded} msgs ({record.model_calls} call{'s' if record.model_calls > 1 else ''})"
    if _collapsed(record, session):
        limit = _limit(session)
        msgs = f"{record.messages_after} msg{'s' if record.messages_after > 1 else ''}"
        if after <= limit:
            note = (f"(a pasted log took the window to {before:,} {unit}, over twice the limit: only the newest {msgs} fit; "
                    "the full history keeps the log)")
        else:  # the newest turn alone is over the limit: the window keeps it whole, view() cuts it for the model
            note = (f"(a pasted log: the newest turn alone ({msgs}, {after:,} {unit}) is over the {limit:,}-{unit.rstrip('s')} limit, "
                    "so the window keeps just that turn, whole; view() cuts it to fit the limit for the next request, "
                    "and the full history keeps it whole)")
        line += "\n" + textwrap.fill(note, 110, initial_indent=" " * 13, subsequent_indent=" " * 14)
    return line


def _limit(session: Session) -> int:
    limits = session.settings.resolved()
    return limits.tokens or limits.chars


def _collapsed(record: TraceRecord, session: Session) -> bool:
    limits = session.settings.resolved()
    before = record.tokens_before if limits.tokens else record.chars_before
    return record.messages_after <= 2 and before > 2 * _limit(session)


def _turns(session: Session) -> int:
    """On how many turns the session resized."""
    return len({record.turn for record in session.trace})


def section(title: str, code: str, session: Session, messages: list[dict[str, Any]], out: Callable[[str], None] = print) -> Session:
    """Replay ``messages`` through ``session`` and print its resizes, one line each (at most ``_SHOWN``)."""
    out(f"{title}\n  {code}")
    replay(session, messages)
    changed = [r for r in session.trace if r.messages_after != r.messages_before or r.model_calls]
    idle = len(session.trace) - len(changed)
    shown = changed[:_SHOWN]
    oversized = next((r for r in changed[_SHOWN:] if _collapsed(r, session)), None)
    for record in shown:
        out(_line(record, session))
    if oversized is not None:
        out(_line(oversized, session))
    more = len(changed) - len(shown) - (oversized is not None)
    totals = session.window_totals
    size = f"{totals.tokens:,} tokens" if session.settings.resolved().tokens else f"{totals.chars:,} chars"
    out(f"  ... {more} more. {len(session.trace)} resizes in all"
        + (f" ({idle} scheduled one{'s' if idle > 1 else ''} found nothing to cut)" if idle else "") + ".")
    out(f"  Full history: {len(session.full_chat_history)} messages, nothing lost; window now {totals.count} msgs, {size}.")
    return session


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The demo's options (``session-graph demo --help``)."""
    parser.add_argument("--turns", type=int, default=120, help="conversation length in turns (default 120)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated conversation")
    parser.add_argument("--plot", metavar="OUT.png", help="write the four windows' plots to this file (needs matplotlib)")
    return parser


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """Run the demo with parsed options; returns the exit status."""
    messages = conversation(args.turns, args.seed)
    try:
        check_figure_path(args.plot)  # a bad --plot path fails now, not after the demo
    except (ConfigurationError, MissingDependencyError) as error:
        print(f"session-graph: {error}", file=sys.stderr)
        return 2
    out(f"session_graph demo: {args.turns} turns, {len(messages)} messages (tool calls, images, pasted logs), offline.")
    out("After each assistant reply, session.judge_resize() applies the policy to the window (what the model sees):")
    out("  over the size limit (chars or tokens)  -> a 'deep' resize: fold what leaves into the memo or summary")
    out("                                            (when a model is set), then prune the oldest turns;")
    out(f"  over the message limit, or every {Session().settings.resolved().every_n_turns} turns -> a 'lite' resize: fold into "
        "the memo (when there is one), prune only what is over.")
    out("session.resize() runs it. Each line below is one resize: when, why, and what it did to the window.\n")
    lite_session = Session().configure(limit={"chars": 4000})
    lite = section("1. Lite mode: prune the window to a limit", 'Session().configure(limit={"chars": 4000})',
                   lite_session, messages, out)
    deeper = replay(Session().configure(limit={"chars": 4000}).set_settings("session.resize.prune_to_ratio", 0.8), messages)
    ratio = lite.settings.resolved().prune_chars / lite.settings.resolved().chars
    why = (f"Why so many: lite mode prunes to {ratio:.0%} of the limit (session.resize.prune_to_ratio {ratio:.1f}: keep all "
           f"that fits), so a turn or two later the window is over again: it resized on {_turns(lite)} of {args.turns} "
           f"turns, each a cheap prune (no model call). With prune_to_ratio 0.8 (prune to "
           f"{deeper.settings.resolved().prune_chars:,} chars) it resizes on {_turns(deeper)} turns and the window holds "
           "less. Without a memo, a 'deep' resize prunes as 'lite' does.")
    out(textwrap.fill(why, 110, initial_indent="  ", subsequent_indent="  ") + "\n")
    memo = section("2. Memo mode: a model folds what leaves the window into a memo (scripted, offline)",
                   'Session(model=chat_model).use_memo(chars=4000)', Session(model=ScriptedModel()).use_memo(chars=4000), messages, out)
    out(f"  memo: {textwrap.shorten(json.dumps(memo.memo_for_model), 100, placeholder=' ...')}\n")
    budget = section("3. A token budget: exact o200k_base counts, offline", 'Session().configure(limit={"tokens": 1500})',
                     Session().configure(limit={"tokens": 1500}), messages, out)
    view = budget.view()
    out(f"  view(): {len(view)} messages, {view.tokens:,} tokens, within the {view.budget:,}-token budget.\n")
    summary = section("4. Summary mode: a running summary of what left the window",
                      'Session(model=chat_model).configure(mode="summary", limit={"tokens": 1500})',
                      Session(model=ScriptedModel()).configure(mode="summary", limit={"tokens": 1500}), messages, out)
    out(f"  summary: {textwrap.shorten(summary.memo.get('summary', ''), 100, placeholder=' ...')}\n")
    out("Next: session.trace holds every resize (route, times, model calls); session.plot() draws it")
    out('  (pip install "session_graph[viz]"); session.draw() shows the resize graph; notebooks/ has')
    out("  the quickstart, an agent (SessionMiddleware) and long-term memory (commit); the README covers")
    out("  memo, token budgets, agents, stores and moving from nanobot (session-graph sessions --help).")
    if args.plot:
        return _plot(args.plot, [("lite", lite), ("memo", memo), ("token budget", budget), ("summary", summary)], out)
    return 0


def _plot(path: str, sessions: list[tuple[str, Session]], out: Callable[[str], None]) -> int:
    try:
        from session_graph.display.plots import new_figure, plot_window

        fig = new_figure(figsize=(9, 11))
    except MissingDependencyError as error:
        out(f"session-graph: {error}")
        return 1
    for ax, (name, session) in zip(fig.subplots(len(sessions), 1), sessions, strict=True):
        plot_window(session, ax=ax)
        ax.set_title(f"{name}: {ax.get_title()}", fontsize=9)
    fig.savefig(path, dpi=110)
    out(f"Wrote {path}.")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The demo alone (``session-graph demo``); returns the exit status."""
    parser = add_arguments(argparse.ArgumentParser(prog="session-graph demo", description=__doc__.splitlines()[0]))
    return run(parser.parse_args(argv))
