"""Memory fidelity: what a long conversation keeps inside a token budget, and what it costs.

Run: ``python bench/bench_fidelity.py`` (about a minute; ``--messages 600`` for a quick run).
One seeded conversation (default 2,000 messages, 40% tool turns, English, Chinese and
code; every message carries a marker ``@0123@``) goes through, side by side in this run:

- session_graph in summary mode and in memo mode (limit ``{"tokens": 4000}``);
- LangChain's ``SummarizationMiddleware`` (trigger at the same 4,000 tokens, its default
  keep of 20 messages), driven hook by hook as ``create_agent`` would;
- langmem's ``summarize_messages`` (``max_tokens`` 4,000, summary 512) when langmem is
  installed (``pip install -e ".[bench]"``), else its row says why it is missing.

All use the same fake summariser, which reads every marker it is shown and answers with the
set of markers it knows (as ranges, so a model that honours the budget stays small; or, in
the second table, one line per marker, ignoring the budget). Printed per system:

- model calls; characters sent to the summariser / characters of the conversation (goal <= 1.2);
- evicted messages fed to the summariser 0x / 1x / 2x+ (goal: all 1x);
- evicted messages whose marker the final summary does not hold (goal 0);
- evicted messages covered by the context message the model is shown (final / median over views),
  beside the room's capacity: the share of the evicted messages the context message's room could
  cover if filled with the model's own notes (at what its last reply spent per message it
  covers) and with the messages' text; coverage / capacity with notes (goal: about 1, "covers
  what the room can hold"), and the context message's fill of its reserve (goal >= 0.80);
- median prompt / budget at every model-call point (goal >= 0.80) and prompts over budget (goal 0);
- with the budget-ignoring model: folds fed the previous summary whole (goal >= 95%) and,
  in memo mode, whether the memo shown was always valid JSON.

A last table compares the window with ``trim_messages(strategy="last", start_on="human")``
on the same tool-call history at a budget of 8,000 tokens: the share of model-call points at
which the window keeps less than 80% of what trim keeps (goal <= 0.5%).
"""

from __future__ import annotations

import argparse
from collections import Counter
import json
from pathlib import Path
import random
import re
import statistics
import sys
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, trim_messages
from langchain_core.outputs import ChatGeneration, ChatResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import Session, TiktokenCounter, message_tokens

MEMO_HEADER = "Memo of the earlier conversation (JSON):\n"
MARKER = re.compile(r"@(\d{4})@")
NUMBER = re.compile(r"\b(\d{1,4})(?::(\d{1,4}))?\b")
BUDGET = 4000
COUNTER = TiktokenCounter("o200k_base")
EN = ["the export job", "a flaky test", "the billing report", "cache keys", "the retry policy", "deploy windows"]
ZH = ["数据导出任务", "缓存失效问题", "部署窗口", "账单报表", "重试策略"]
CODE = ["def retry(fn, n=3):\n    for i in range(n):\n        try:\n            return fn()\n        except IOError:\n            pass",
        "SELECT id, total FROM invoices WHERE paid = false ORDER BY due LIMIT 50;",
        "for (const k of keys) { cache.delete(k); }"]


# -- the conversation ---------------------------------------------------------------------------
SHORT_ASKS = ["Can you check {} for me today?", "Is {} done yet, do you know?", "What broke in {} this morning?",
              "Any news on {} since lunch?"]
SHORT_ANSWERS = ["Yes, {} is fine again now.", "Not yet; {} still fails twice.", "I restarted {} an hour ago.",
                 "{} looks good to me so far."]


def conversation(n: int, seed: int = 7, kind: str = "mixed") -> list[BaseMessage]:
    """``n`` messages with a marker in each. ``mixed``: user ~200 chars (a quarter Chinese), 40%
    tool turns (result ~0.7 kB), answers ~0.6 kB. ``zh``: the same shapes, all Chinese.
    ``short``: English chat of ~50-character messages, 10% tool turns."""
    if kind == "short":
        return short_conversation(n, seed)
    rng = random.Random(seed)
    out: list[BaseMessage] = []
    turn = 0
    while len(out) < n:
        def mark() -> str:
            return f"@{len(out):04d}@"

        topic = rng.choice(ZH if kind == "zh" else EN + ZH)
        lang = 0.0 if kind == "zh" else rng.random()
        ask = (f"关于{topic}，请帮我看一下。" * 6) if lang < 0.25 else (f"Can you look into {topic}? " * 6)
        out.append(HumanMessage(content=f"{mark()} {ask[:200]}", id=f"m{len(out)}"))
        if rng.random() < 0.4:
            call = f"call_{turn}"
            out.append(AIMessage(content="", tool_calls=[{"id": call, "name": "search", "args": {"q": f"{mark()} {topic}"}}],
                                 id=f"m{len(out)}"))
            body = rng.choice(CODE) if rng.random() < 0.3 else f"{topic}: 3 documents match. " * 25
            if kind == "zh":
                body = f"{topic}：找到三份相关文档，最近一次修改在上周。" * 25
            out.append(ToolMessage(content=f"{mark()} {body[:700]}", tool_call_id=call, name="search", id=f"m{len(out)}"))
        answer = (f"关于{topic}的结论：先回滚，再测量。" * 20) if lang < 0.25 else (f"On {topic}: roll back first, measure, then fix. " * 14)
        out.append(AIMessage(content=f"{mark()} {answer[:600]}", id=f"m{len(out)}"))
        turn += 1
    return out[:n]


def short_conversation(n: int, seed: int = 7) -> list[BaseMessage]:
    rng = random.Random(seed)
    out: list[BaseMessage] = []
    turn = 0
    while len(out) < n:
        topic = rng.choice(EN)
        out.append(HumanMessage(content=f"@{len(out):04d}@ " + rng.choice(SHORT_ASKS).format(topic), id=f"m{len(out)}"))
        if rng.random() < 0.1:
            call = f"call_{turn}"
            out.append(AIMessage(content="", tool_calls=[{"id": call, "name": "status", "args": {"q": f"@{len(out):04d}@"}}],
                                 id=f"m{len(out)}"))
            out.append(ToolMessage(content=f"@{len(out):04d}@ {topic}: ok", tool_call_id=call, name="status", id=f"m{len(out)}"))
        out.append(AIMessage(content=f"@{len(out):04d}@ " + rng.choice(SHORT_ANSWERS).format(topic).capitalize(), id=f"m{len(out)}"))
        turn += 1
    return out[:n]


def text_chars(message: BaseMessage) -> int:
    calls = "".join(json.dumps(c["args"], ensure_ascii=False) for c in getattr(message, "tool_calls", []) or [])
    return len(message.text) + len(calls)


def tokens(messages: Any) -> int:
    return sum(message_tokens(m, COUNTER) for m in messages) + 3


# -- the fake summariser --------------------------------------------------------------------------
def ranges(numbers: set[int]) -> str:
    parts, ordered = [], sorted(numbers)
    start = prev = None
    for n in ordered:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            parts.append(f"{start:04d}:{prev:04d}" if start != prev else f"{start:04d}")
            start = prev = n
    if start is not None:
        parts.append(f"{start:04d}:{prev:04d}" if start != prev else f"{start:04d}")
    return ", ".join(parts)


def decode(text: str) -> set[int]:
    """The message numbers a summary says it holds (ranges ``a:b`` and single numbers, zero-padded as the markers are)."""
    seen: set[int] = set()
    for line in text.splitlines():
        if "seen" not in line:
            continue
        for a, b in NUMBER.findall(line.split("seen", 1)[1]):
            seen.update(range(int(a), int(b or a) + 1))
    return seen


class MarkerModel(BaseChatModel):
    """Answers every summary or memo request with the markers it was shown (and already knew).

    ``policy``: ``honours`` its budget (markers as ranges); ``compresses`` only when asked (one
    line per marker in a fold, ranges when asked to compress); ``ignores`` both (a compression
    request gets the same content back).
    """

    policy: str = "honours"
    calls: int = 0
    compressions: int = 0
    sent: int = 0
    fed: Counter = None  # type: ignore[assignment]
    last: str = ""
    folds: int = 0
    fed_whole: int = 0

    def model_post_init(self, _: Any) -> None:
        self.fed = Counter()

    @property
    def _llm_type(self) -> str:
        return "marker-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        text = "\n".join(m.text for m in messages)
        self.calls += 1
        self.sent += len(text)
        markers = {int(x) for x in MARKER.findall(text)}
        self.fed.update(markers)
        compression = "Rewrite" in messages[0].text[:20]
        self.compressions += compression
        honour = self.policy == "honours" or (compression and self.policy == "compresses")
        if not compression:
            if self.folds:
                self.fed_whole += self.last in text
            self.folds += 1
        known = decode(text) | markers
        memo = '{"memo"' in messages[0].text
        if compression and not honour:  # ignores the budget again: gives the same content back
            reply = json.dumps({"memo": json.loads(messages[-1].text)}) if memo else messages[-1].text
        elif memo:
            content: Any = ranges(known) if honour else [f"seen {n:04d}" for n in sorted(known)]
            reply = json.dumps({"memo": {"topic": "support work", "seen": content}})
        elif honour:
            reply = f"Overview: support work\nKey facts and decisions:\n- seen {ranges(known)}\nOpen tasks:\n- none"
        else:
            reply = "Overview: support work\nKey facts and decisions:\n" + "\n".join(f"- seen {n:04d}" for n in sorted(known))
        self.last = reply if not memo else json.dumps(json.loads(reply)["memo"], ensure_ascii=False)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


# -- the systems ----------------------------------------------------------------------------------
def shown_markers(view: Any) -> tuple[set[int], set[int], int]:
    """(markers the view's context message holds, markers of the view's other messages, its tokens)."""
    context = next((m for m in view.messages if (m.id or "").endswith((":summary", ":memo"))), None)
    others = {int(m.id[1:]) for m in view.messages if m is not context and (m.id or "").startswith("m")}
    if context is None:
        return set(), others, 0
    return decode(context.text.replace('"seen', '\nseen')), others, message_tokens(context, COUNTER)


def run_ours(messages: list[BaseMessage], mode: str, model: MarkerModel) -> dict[str, Any]:
    session = Session(model=model).configure(mode=mode, limit={"tokens": BUDGET})
    reserve = session.settings.resolved().reserve_tokens
    prompts, invalid, coverage, fills, capacity = [], 0, [], [], []
    costs: dict[str, int] = {}
    total = 0  # tokens of every message so far
    for index, message in enumerate(messages):
        total += costs.setdefault(message.id or "", message_tokens(message, COUNTER))
        session.append_message(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            continue  # the model just spoke; the next call comes after the tool result
        if session.judge_resize():
            session.resize()
        view = session.view()
        prompts.append(view.tokens)
        held, others, context_tokens = shown_markers(view)
        evicted = index + 1 - len(others)  # every message so far that the view's window does not show
        if evicted:
            coverage.append(len({n for n in held if n <= index and n not in others}) / evicted)
            fills.append(context_tokens / reserve)
            capacity.append(room_capacity(model, reserve, evicted, total - sum(costs[f"m{n}"] for n in others)))
        if mode == "memo":
            shown = [m for m in view.messages if m.text.startswith(MEMO_HEADER)]
            try:
                for m in shown:
                    json.loads(m.text[len(MEMO_HEADER) :])
            except ValueError:
                invalid += 1
    window = {m.id for m in session.current_chat_history}
    held = session.memo.get("summary", "") if mode == "summary" else json.dumps(session.memo_for_model)
    return {"prompts": prompts, "evicted": [int(m.id[1:]) for m in messages if m.id not in window],
            "held": decode(held.replace('"seen', '\nseen')), "invalid_json": invalid,
            "coverage": coverage, "fills": fills, "capacity": capacity}


def room_capacity(model: MarkerModel, reserve: int, evicted: int, evicted_tokens: int) -> tuple[float, float]:
    """What share of the evicted messages the context message's room could cover if filled:
    (with the model's own notes, at what its last reply spent per message it covers; with the
    messages' text itself)."""
    notes = decode(model.last.replace('"seen', "\nseen"))
    per_note = COUNTER.count_text(model.last) / max(1, len(notes)) if notes else float("inf")
    return min(1.0, reserve / (per_note * evicted)), min(1.0, reserve / max(1, evicted_tokens))


def run_langchain(messages: list[BaseMessage], model: MarkerModel) -> dict[str, Any]:
    from langchain.agents.middleware import SummarizationMiddleware

    middleware = SummarizationMiddleware(model=model, trigger=("tokens", BUDGET), token_counter=tokens)
    state: list[BaseMessage] = []
    prompts = []
    for message in messages:
        state.append(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            continue
        update = middleware.before_model({"messages": state}, None)  # type: ignore[arg-type]
        if update is not None:
            state = list(update["messages"][1:])  # [RemoveMessage(ALL), summary, *kept]
        prompts.append(tokens(state))
    kept = {m.id for m in state}
    summary = next((m.text for m in state if m.additional_kwargs.get("lc_source") == "summarization"), "")
    return {"prompts": prompts, "evicted": [int(m.id[1:]) for m in messages if m.id not in kept], "held": decode(summary)}


def run_langmem(messages: list[BaseMessage], model: MarkerModel) -> dict[str, Any] | str:
    try:
        from langmem.short_term import summarize_messages
    except ImportError:
        return "langmem is not installed (pip install -e '.[bench]')"
    running = None
    seen: list[BaseMessage] = []
    prompts = []
    evicted: set[str] = set()
    for message in messages:
        seen.append(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            continue
        result = summarize_messages(seen, running_summary=running, model=model, max_tokens=BUDGET,
                                    max_tokens_before_summary=BUDGET, max_summary_tokens=512, token_counter=tokens)
        running = result.running_summary
        prompts.append(tokens(result.messages))
        if running is not None:
            evicted |= running.summarized_message_ids
    return {"prompts": prompts, "evicted": sorted(int(i[1:]) for i in evicted),
            "held": decode(running.summary if running is not None else "")}


# -- reporting ------------------------------------------------------------------------------------
def report(name: str, result: dict[str, Any] | str, model: MarkerModel, chars: int, rows: list[str]) -> None:
    if isinstance(result, str):
        rows.append(f"| {name} | {result} |" + " |" * 12)
        return
    evicted = result["evicted"]
    fed = [model.fed[i] for i in evicted]
    zero, once, more = sum(f == 0 for f in fed), sum(f == 1 for f in fed), sum(f >= 2 for f in fed)
    lost = sum(i not in result["held"] for i in evicted)
    prompts = result["prompts"]
    coverage, fills, capacity = result.get("coverage"), result.get("fills"), result.get("capacity")
    if coverage:
        ratios = [c / max(cap[0], 1e-9) for c, cap in zip(coverage, capacity, strict=True)]
        seen = (f"{coverage[-1]:.1%} / {statistics.median(coverage):.1%} | {capacity[-1][0]:.1%} / {capacity[-1][1]:.2%} | "
                f"{ratios[-1]:.2f} / {statistics.median(ratios):.2f} | {statistics.median(fills):.2f}")
    else:
        seen = "n/a | n/a | n/a | n/a"
    rows.append(
        f"| {name} | {model.calls} | {model.sent / chars:.2f} | {zero} / {once} / {more} | {lost} of {len(evicted)} | "
        f"{seen} | {statistics.median(prompts) / BUDGET:.2f} | {sum(p > BUDGET for p in prompts)} | "
        f"{model.compressions}/{max(1, model.folds)} | {model.fed_whole}/{max(0, model.folds - 1)} |"
    )


POLICIES = {
    "honours": "a summariser that honours the budget",
    "compresses": "a summariser that ignores the budget but compresses when asked",
    "ignores": "a summariser that ignores the budget and the request to compress",
}


def fidelity(messages: list[BaseMessage], policy: str, label: str, others: bool) -> None:
    """One table: our two modes (and, when ``others``, LangChain's and langmem's) with one model policy."""
    chars = sum(text_chars(m) for m in messages)
    rows = []
    systems: list[tuple[str, Any]] = [
        ("session_graph summary", lambda m: run_ours(messages, "summary", m)),
        ("session_graph memo", lambda m: run_ours(messages, "memo", m)),
    ]
    if others:
        systems += [("LangChain SummarizationMiddleware", lambda m: run_langchain(messages, m)),
                    ("langmem summarize_messages", lambda m: run_langmem(messages, m))]
    for name, run in systems:
        model = MarkerModel(policy=policy)
        started = time.process_time()
        result = run(model)
        report(name, result, model, chars, rows)
        if isinstance(result, dict) and "invalid_json" in result and name.endswith("memo"):
            rows[-1] += f" memo shown as invalid JSON at {result['invalid_json']} of {len(result['prompts'])} points |"
        rows[-1] += f" {time.process_time() - started:.1f} s CPU (the whole run of this system)"
    print(f"\n{label}: {len(messages):,} messages, {chars:,} chars, budget {BUDGET} tokens, {POLICIES[policy]}:\n")
    print("| system | calls | chars sent / conversation | evicted fed 0x / 1x / 2x+ | evicted lost (stored) "
          "| evicted covered by the context message shown: final / median "
          "| room capacity, final: with the model's notes / with the messages' text "
          "| coverage / capacity with notes: final / median | context message / its reserve (median) "
          "| median prompt / budget | prompts over budget | compression requests / folds | folds fed the previous whole |")
    print("|---|---:|---:|---|---|---|---|---|---:|---:|---:|---:|---|")
    print("\n".join(rows))


def versus_trim(messages: list[BaseMessage], budget: int = 8000) -> None:
    session = Session().configure(limit={"tokens": budget})
    cache: dict[str, int] = {}

    def count(batch: list[BaseMessage]) -> int:
        return sum(cache.setdefault(m.id, message_tokens(m, COUNTER)) for m in batch)

    points = short = 0
    worst = (1.0, 0, 0)
    for index, message in enumerate(messages):
        session.append_message(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            continue
        if session.judge_resize():
            session.resize()
        recent = messages[max(0, index - 400) : index + 1]
        kept = count(trim_messages(recent, max_tokens=budget - 3, token_counter=count, strategy="last", start_on="human"))
        ours = session.view().tokens - 3
        points += 1
        if ours < 0.8 * kept:
            short += 1
        worst = min(worst, (ours / max(kept, 1), ours, kept))
    print(f"\nWindow vs trim_messages at {budget} tokens over {points} model-call points: {short} ({short / points:.2%}) keep "
          f"< 80% of what trim keeps (goal <= 0.5%); worst {worst[1]} vs {worst[2]} tokens ({worst[0]:.2f}).")


KINDS = {"mixed": "English, Chinese and code", "zh": "Chinese only", "short": "short English messages (~45 chars)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--kinds", default="mixed,zh,short", help="conversations to run: mixed, zh, short")
    parser.add_argument("--policies", default="honours,compresses,ignores", help="model policies to run")
    parser.add_argument("--no-trim", action="store_true", help="skip the comparison with trim_messages")
    args = parser.parse_args()
    for kind in args.kinds.split(","):
        messages = conversation(args.messages, kind=kind)
        for policy in args.policies.split(","):
            fidelity(messages, policy, KINDS[kind], others=kind == "mixed" and policy != "compresses")
    if not args.no_trim:
        versus_trim(conversation(args.messages))


if __name__ == "__main__":
    main()
