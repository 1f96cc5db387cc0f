"""Real models: memo, summary and commit over one fixed conversation with 12 planted facts.

Opt-in (it needs a model; nothing here downloads one). Any chat model ``init_chat_model``
names, a local OpenAI-compatible server (llama.cpp ``llama-server``, vLLM), or a GGUF file
through langchain-community's ``ChatLlamaCpp``::

    python bench/bench_real_model.py --model "ollama:qwen2.5-coder:1.5b"          # pip install langchain-ollama
    python bench/bench_real_model.py --model "openai:local" --base-url http://127.0.0.1:8080/v1 --api-key none
    python bench/bench_real_model.py --gguf ~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python bench/bench_real_model.py --fake                                       # what CI and the tests run
    python bench/bench_real_model.py --replay tests/data/real-model-replies.json  # recorded real replies again

The conversation (22 messages, a platform migration) is fed turn by turn to a session in memo
mode and one in summary mode (``limit={"messages": 4}``, resized by the policy after every
turn), then committed to long-term memory twice (after 12 messages and at the end, so the
second commit has similar memories to decide on). ``--fake`` answers with a scripted model
that writes the shapes real models write (fences with and without tags, the bare memo, prose
around the object, ``<think>``, single quotes, trailing commas, one reply cut at the output
cap, one summary fold that returns the previous summary unchanged).

Printed for memo, summary and commit:
- calls: model calls (folds, retries, compressions; commit steps);
- refused: replies the library could not use (each with its reason below the table);
- strict: of the same replies, how many the previous parser (only ``{"memo": {...}}`` /
  the exact JSON key, one fenced or bare object, strict JSON) would have refused: the baseline,
  read from the same replies in the same process;
- ignored: summary replies that ignored what they were fed / folds whose messages were kept
  in the window because the retry ignored them too;
- facts kept: planted facts (case-insensitive string match) in the final memo, summary or
  stored memories, of 12; in view: in what the model is shown at the end (memo or summary, window);
- s/call: wall-clock seconds per model call (a real model's time is wall time).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_json_markdown
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import MemoUpdateError, ModelReplyError, Session
from session_graph.compression.fold_check import ignored_reason
from session_graph.compression.memo import parse_memo_reply
from session_graph.llm.replies import reply_text, summary_text
from session_graph.memory import MemoryConfig
from session_graph.memory.replies import parse_decisions, parse_extraction, parse_summary

FACTS = ["Priya Raman", "Halvorsen", "INC-20417", "PostgreSQL 15", "212 million", "Frankfurt", "48,500",
         "March 14", "Tomasz", "Redis", "nine hours", "Thursday"]

# -- the conversation (recorded with the real replies in tests/data/real-model-replies.json) --------
CONVERSATION = [
    ('user', "Hi, I'm Priya Raman, head of platform at Halvorsen Logistics. We need help planning the migration of"
     ' our shipment-tracking service off the old on-prem cluster. Our support ticket is INC-20417.'),
    ('assistant', "Hello Priya, thanks for reaching out about ticket INC-20417. I'd be glad to help plan the migration."
     ' To start, could you describe the current architecture of the shipment-tracking service, the data '
     'stores it uses, and any hard constraints such as dates, budget or compliance requirements?'),
    ('user', 'Sure. The service is a set of Java microservices behind an nginx gateway. The main data store is a '
     'PostgreSQL 15 database. The biggest table, shipment_events, has about 212 million rows and grows by '
     'roughly 400,000 rows a day. We also run a small Memcached tier in front of the lookups.'),
    ('assistant', "Thanks, that's a useful picture. A 212 million row table is large but manageable for an online "
     'migration if we plan the replication carefully. Logical replication from PostgreSQL 15 would let us '
     'keep the old cluster serving traffic while the new one catches up, then we cut over during a short '
     'window. Before going further, where do you want the new environment hosted?'),
    ('user', 'Everything has to stay in the EU for compliance reasons. We picked the Frankfurt region of our cloud'
     ' provider. Legal signed off on Frankfurt last month, so that part is fixed.'),
    ('assistant', 'Understood: Frankfurt it is, and that simplifies the data-residency discussion. Next, the budget and'
     ' timeline. Is there a fixed budget for the project, and is there a go-live date you have to meet?'),
    ('user', 'The budget approved by finance is $48,500 for the whole migration, including the contractor hours '
     'and the first three months of the new infrastructure. The hard deadline for go-live is March 14, '
     'because the old hardware lease expires right after that.'),
    ('assistant', 'Got it. $48,500 is enough for a careful migration of this size if we avoid over-provisioning in the '
     "first months. March 14 gives us a clear target; I'd suggest we aim to be ready about two weeks "
     'earlier so that we have slack for a rehearsal and a rollback plan. Who on your side will own the '
     'database work?'),
    ('user', 'Our DBA is Tomasz Nowak. He knows the schema inside out and he has already tested logical '
     'replication on a copy of the database. He will be the one running the cutover.'),
    ('assistant', 'Excellent, having Tomasz run the cutover is ideal since he has already exercised logical '
     "replication. I'd like him to measure how long the initial table copy of shipment_events takes on the"
     ' copy he used, because that number drives the whole schedule.'),
    ('user', 'What do you think about the order of operations? Should we move the application services first or '
     'the database first?'),
    ('assistant', 'In most migrations like this one it is safer to move the database first while the application still '
     'runs in the old environment, then move the services once replication is stable. The reason is that '
     'application deployments are easy to roll back, while a half-moved database is painful. That said, '
     'network latency between the old site and the new region matters: if the services in the old site '
     'talk to the new database for long, every query pays the round trip. So the plan should keep that '
     'period short, ideally a few hours, and during that time we should watch the p95 latency of the '
     'lookup endpoints closely. We can also add read replicas close to the services if the latency gets '
     'uncomfortable.'),
    ('user', 'That makes sense. How should we handle schema changes during the replication period? The product '
     'team keeps shipping small changes every week.'),
    ('assistant', 'Logical replication does not carry DDL, so every schema change must be applied on both sides in the '
     'right order. The usual rule is: additive changes such as new nullable columns or new tables go to '
     'the subscriber first, then to the publisher; destructive changes wait until after the cutover. It '
     "helps to declare a short schema freeze in the final week so that nobody is surprised. I'd also "
     'recommend a checklist in the pull request template that asks whether a migration touches replicated '
     'tables, so the reviewers catch it early rather than at deploy time.'),
    ('user', 'OK. And monitoring? We mostly rely on dashboards someone built years ago and nobody fully trusts '
     'them.'),
    ('assistant', 'Then part of the migration should be rebuilding the essential dashboards from scratch rather than '
     "porting the old ones. I'd start with four signals for each service: request rate, error rate, "
     'latency percentiles, and saturation of the main resource. For the database add replication lag, '
     'connection count, and the size of the write-ahead log. Alerts should fire on symptoms that users '
     'feel, like error rate and latency, and not on every CPU spike. Keep the first version small; a '
     'dashboard that people trust is worth more than twenty that nobody reads.'),
    ('user', 'Good. Another question: what about the Memcached tier? Should we just recreate it in the new '
     'environment?'),
    ('assistant', 'You could, but this is also a natural moment to reconsider it. Memcached is simple and fast, but it '
     'has no persistence and no replication, so a restart empties the cache and the database takes the '
     'full load at once. If warm restarts matter to you, a managed Redis with replication would avoid that'
     " thundering-herd effect. The trade-off is a bit more operational surface and cost. Let's weigh it "
     'once we know the traffic numbers.'),
    ('user', 'Our peak traffic is on Monday mornings when the weekend shipments get scanned. The cache hit ratio '
     'is around ninety percent on those days. A cold cache on a Monday would be a disaster.'),
    ('assistant', 'Then the case for a replicated cache is strong. A ninety percent hit ratio means the database sees '
     'ten times its normal load when the cache is cold, and on a Monday morning that could push the '
     'lookups into timeouts. With a replicated cache, a node failure or a restart would leave a warm '
     "replica to serve from. I'd recommend we move to Redis as part of this project; the client change in "
     'the Java services is small because the access pattern is plain get and set with a time to live.'),
    ('user', 'Great. Tomasz measured the initial copy on his test copy: about nine hours for shipment_events. '
     "Let's meet again on Thursday to go through the rehearsal plan with him."),
    ('assistant', 'Nine hours is fine; we can start the initial copy several days before March 14 and let it catch up. '
     "I've put the follow-up meeting on Thursday with you and Tomasz Nowak to go through the rehearsal "
     "plan. Until then I'll draft the runbook, the Redis change and the cost estimate against the $48,500 "
     'budget.'),
]


# -- what a reply is, and how each parser reads it ------------------------------------------------
def kind_of(prompt: list[BaseMessage]) -> str:
    """Which prompt the library sent, by its system message."""
    system = prompt[0].text if prompt else ""
    for start, kind in (("You maintain the memo", "memo"), ("Rewrite this memo", "memo"),
                        ("You write the archive record", "commit_summarize"), ("You pick out what is worth", "commit_extract"),
                        ("You keep a long-term memory", "commit_decide"), ("Rewrite the summary", "summary")):
        if system.startswith(start):
            return kind
    return "summary"


NEW = {"memo": parse_memo_reply, "summary": summary_text, "commit_summarize": parse_summary,
       "commit_extract": parse_extraction, "commit_decide": parse_decisions}


def strict(kind: str, reply: Any) -> None:
    """The previous reading: langchain-core's JSON-in-Markdown parser, the exact wrapper key."""
    text = reply_text(reply)
    if kind in ("summary", "commit_summarize"):
        if not text:
            raise ValueError("empty")
        return
    data = parse_json_markdown(text, parser=json.loads)
    key = {"memo": "memo", "commit_extract": "memories", "commit_decide": "decisions"}[kind]
    if not isinstance(data, dict) or not isinstance(data.get(key), dict if kind == "memo" else list):
        raise ValueError(f"no {key}")


class Meter(BaseCallbackHandler):
    """Every model call: its prompt kind, reply and wall time."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._open: dict[UUID, tuple[str, float]] = {}
        self._bodies: dict[UUID, str] = {}

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any) -> None:
        self._open[run_id] = (kind_of(messages[0]), time.perf_counter())
        self._bodies[run_id] = messages[0][-1].text if messages[0] else ""

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        kind, start = self._open.pop(run_id, ("?", time.perf_counter()))
        generation = response.generations[0][0]
        reply = generation.message if isinstance(generation, ChatGeneration) else generation.text
        if isinstance(reply, AIMessage) and reply.tool_calls and not reply_text(reply):  # structured output
            reply = json.dumps({"memo": reply.tool_calls[0]["args"]} if kind == "memo" else reply.tool_calls[0]["args"])
        self.calls.append({"kind": kind, "reply": reply, "body": self._bodies.pop(run_id, ""),
                           "seconds": time.perf_counter() - start})

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        kind, start = self._open.pop(run_id, ("?", time.perf_counter()))
        self.calls.append({"kind": kind, "reply": None, "error": repr(error), "seconds": time.perf_counter() - start})


def judged(calls: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
    """(refused now, refused by the strict parser, the reasons) of recorded replies."""
    refused, baseline, reasons = 0, 0, []
    for call in calls:
        if call["reply"] is None:
            refused, baseline = refused + 1, baseline + 1
            reasons.append(f"{call['kind']}: the call failed: {call['error'][:120]}")
            continue
        try:
            NEW[call["kind"]](call["reply"])
        except (ModelReplyError, MemoUpdateError, ValueError) as error:
            refused += 1
            reasons.append(f"{call['kind']}: {str(error)[:160]}")
        try:
            strict(call["kind"], call["reply"])
        except (OutputParserException, ValueError, KeyError):
            baseline += 1
    return refused, baseline, reasons


def ignored_replies(calls: list[dict[str, Any]]) -> int:
    """Summary replies that ignored what they were fed, by the library's own check."""
    count = 0
    for call in calls:
        if call["kind"] == "summary" and call["reply"] is not None and "\n\nNew messages:\n" in call["body"]:
            head, fed = call["body"].split("\n\nNew messages:\n", 1)
            previous = head.split("Current summary:\n", 1)[-1]
            previous = "" if previous == "(none yet)" else previous
            count += ignored_reason(previous, [HumanMessage(content=fed)], reply_text(call["reply"])) is not None
    return count


def kept(text: str) -> int:
    return sum(fact.lower() in text.lower() for fact in FACTS)


# -- the runs -------------------------------------------------------------------------------------
def fold_run(model: Runnable, mode: str) -> dict[str, Any]:
    meter = Meter()
    session = Session(model=model.with_config(callbacks=[meter]))
    session.configure(mode=mode, limit={"messages": 4}, every_n_turns=0)  # type: ignore[arg-type]
    session.set_settings("session.resize.prune_to_ratio", 1.0)  # a prune to exactly 4: a fold after every turn
    failures = 0
    for role, content in CONVERSATION:
        session.append_message({"role": role, "content": content})
        if role == "assistant":
            try:
                session.resize()
            except MemoUpdateError:
                failures += 1  # the window keeps what was not folded; the next resize retries
    kept_out = sum("ignored the messages it was fed" in (record.error or "") for record in session.trace)
    ignored = f"{ignored_replies(meter.calls)}/{kept_out}" if mode == "summary" else None
    final = json.dumps(session.memo_for_model, ensure_ascii=False) if mode == "memo" else session.memo.get("summary", "")
    seen = " ".join(str(message.text) for message in session.view().messages)
    return {"meter": meter, "failed_folds": failures, "ignored": ignored, "facts": kept(final), "seen": kept(seen),
            "final": final}


def commit_run(model: Runnable) -> dict[str, Any]:
    meter = Meter()
    store = InMemoryStore()
    session = Session(model=model.with_config(callbacks=[meter]), memory=MemoryConfig(store=store, user="priya", agent="bench"))
    results = []
    for index, (role, content) in enumerate(CONVERSATION):
        session.append_message({"role": role, "content": content})
        if index in (11, len(CONVERSATION) - 1):
            results.append(session.commit())
    errors = [error for result in results for error in result["errors"]]
    stored = " ".join(json.dumps(item.value, ensure_ascii=False) for ns in (("user",), ("agent",))
                      for item in store.search(ns, limit=10_000))
    return {"meter": meter, "failed_folds": sum(r["status"] == "partial" for r in results), "ignored": None,
            "facts": kept(stored), "seen": None, "errors": errors, "statuses": [r["status"] for r in results]}


def report(name: str, runs: dict[str, dict[str, Any]]) -> None:
    print(f"model: {name}; conversation: {len(CONVERSATION)} messages, {len(FACTS)} planted facts")
    print(f"{'path':<9}{'calls':>7}{'refused':>9}{'strict':>8}{'ignored':>9}{'facts kept':>12}{'in view':>9}{'s/call':>9}")
    notes = []
    for path, run in runs.items():
        calls = run["meter"].calls
        refused, baseline, reasons = judged(calls)
        seconds = sum(c["seconds"] for c in calls) / max(1, len(calls))
        ignored = "-" if run["ignored"] is None else str(run["ignored"])
        view = "-" if run["seen"] is None else f"{run['seen']}/{len(FACTS)}"
        print(f"{path:<9}{len(calls):>7}{refused:>9}{baseline:>8}{ignored:>9}{run['facts']:>9}/{len(FACTS)}{view:>9}"
              f"{seconds:>9.3f}")
        notes += [f"  {path}: {reason}" for reason in reasons]
        notes += [f"  {path}: commit error: {error[:200]}" for error in run.get("errors", [])]
    print("refused = replies the library could not use (failed calls too); strict = the same replies under the previous parser;")
    print("facts kept = in the final memo, summary or stored memories; in view = in what the model is shown (memo or")
    print("summary and window); commit: two commits, statuses " + str(runs.get("commit", {}).get("statuses", "-")))
    if notes:
        print("why:")
        print("\n".join(notes))


# -- the scripted fake: the shapes real models write ----------------------------------------------
class MessyModel(BaseChatModel):
    """Answers every session_graph prompt the way small local models do, in rotating shapes.

    It reads the planted facts in what it is shown (string match, like the check) and keeps
    them; its shapes are the recorded ones: the bare memo, fences with and without a tag, prose
    around the object, ``<think>``, single quotes and Python literals, trailing commas, one memo
    reply cut at the output cap, one summary fold answered with the previous summary unchanged.
    """

    turn: int = 0
    summaries: int = 0

    @property
    def _llm_type(self) -> str:
        return "messy-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        kind, body = kind_of(messages), messages[-1].text
        seen = [fact for fact in FACTS if fact.lower() in body.lower()]
        self.turn += 1
        meta: dict[str, Any] = {"finish_reason": "stop"}
        if kind == "memo":
            memo = {"facts": seen, "status": "in progress", "done": None}
            shape = (self.turn - 1) % 5
            if shape == 0:
                text = "```json\n" + json.dumps(memo, indent=2) + "\n```"  # the bare memo, as recorded
            elif shape == 1:
                text, meta = "```json\n" + json.dumps({"memo": memo}, indent=2)[:60], {"finish_reason": "length"}
            elif shape == 2:
                text = f"<think>The user gave new facts; keep them.</think>\nHere is the updated memo:\n{memo!r}"
            elif shape == 3:
                text = "Updated memo:\n```\n" + json.dumps(memo)[:-1] + ',}\n```\nLet me know if anything is missing.'
            else:
                text = "```JSON\n" + json.dumps({"memo": memo}, indent=2) + "\n```"
        elif kind == "summary":
            self.summaries += 1
            previous = body.split("Current summary:\n", 1)[-1].split("\n\nNew messages:", 1)[0]
            if self.summaries == 2 and previous != "(none yet)":
                text = previous  # the recorded failure: the previous summary, byte for byte
            else:
                text = "Overview: a platform migration; " + "; ".join(seen) + "."
        elif kind == "commit_summarize":
            text = "# Session Summary\n**Overview**: migration planning: " + ", ".join(seen) + " | in progress\n## Next Step\nNone"
        elif kind == "commit_extract":
            talk = body.split("Conversation:\n", 1)[-1]
            items = [{"category": "entities", "key": fact.lower().replace(" ", "_"), "abstract": fact,
                      "content": f"The conversation mentions {fact}."} for fact in FACTS if fact.lower() in talk.lower()]
            text = "```json\n" + json.dumps({"memories": items})[:-2] + "],}\n```"
        else:
            blocks = [block for block in body.split("\n\n") if block.startswith("Candidate ")]
            decisions = [{"candidate": int(block.split()[1]), "op": "create", "targets": []} for block in blocks]
            text = "Decisions below.\n" + json.dumps({"decisions": decisions})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, response_metadata=meta))])


def replay(path: str) -> dict[str, tuple[int, int, int, int]]:
    """Recorded replies (``tests/data/real-model-replies.json``) read again: per kind, the
    replies, how many the library refuses now, how many the previous parser refused, and how
    many summary folds the fold check calls ignored (asked again, then kept in the window)."""
    recorded = json.loads(Path(path).read_text(encoding="utf-8"))
    kinds = {"memo_fold": "memo", "summary_fold": "summary"}
    table: dict[str, tuple[int, int, int, int]] = {}
    for entry in recorded["replies"]:
        kind = kinds.get(entry["kind"], entry["kind"])
        call = {"kind": kind, "reply": AIMessage(content=entry["reply"]), "body": entry["prompt"][-1]["text"]}
        refused, baseline, _ = judged([call])
        count, now, before, ignored = table.get(kind, (0, 0, 0, 0))
        table[kind] = (count + 1, now + refused, before + baseline, ignored + ignored_replies([call]))
    print(f"recorded replies of {recorded.get('model', '?')} ({path}), read again:")
    print(f"{'kind':<18}{'replies':>8}{'refused':>9}{'previous parser refused':>25}{'ignored folds':>15}")
    for kind, (count, now, before, ignored) in table.items():
        print(f"{kind:<18}{count:>8}{now:>9}{before:>25}{ignored if kind == 'summary' else '-':>15}")
    return table


def chat_model(args: argparse.Namespace) -> tuple[str, Runnable]:
    if args.fake:
        return "fake (scripted messy shapes)", MessyModel()
    if args.gguf:
        from langchain_community.chat_models import ChatLlamaCpp  # pip install langchain-community llama-cpp-python

        return args.gguf, ChatLlamaCpp(model_path=args.gguf, temperature=0, max_tokens=args.max_tokens, n_ctx=8192, verbose=False)
    from langchain.chat_models import init_chat_model

    extra = {key: value for key, value in (("base_url", args.base_url), ("api_key", args.api_key)) if value}
    return args.model, init_chat_model(args.model, temperature=0, max_tokens=args.max_tokens, **extra)


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help='an init_chat_model string, e.g. "ollama:qwen2.5-coder:1.5b"')
    which.add_argument("--gguf", help="a local GGUF file, run through langchain-community's ChatLlamaCpp")
    which.add_argument("--fake", action="store_true", help="the scripted fake model (CI)")
    which.add_argument("--replay", metavar="JSON", help="read recorded replies again (tests/data/real-model-replies.json)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (llama.cpp llama-server, vLLM)")
    parser.add_argument("--api-key", help="the server's key, if it wants one")
    parser.add_argument("--max-tokens", type=int, default=1024, help="the model's output cap (default 1024)")
    parser.add_argument("--only", choices=["memo", "summary", "commit"], action="append", help="run only these paths")
    args = parser.parse_args(argv)
    if args.replay:
        replay(args.replay)
        return {}
    name, model = chat_model(args)
    paths = args.only or ["memo", "summary", "commit"]
    runs = {path: (commit_run(model) if path == "commit" else fold_run(model, path)) for path in paths}
    report(name, runs)
    return runs


if __name__ == "__main__":
    main(sys.argv[1:])
