"""Long-term memory: duplicates, stale facts, what a commit sends, commit latency, prefilter recall.

Run: ``python bench/bench_memory.py`` (under a minute). A scripted model plays the summary,
extraction and decision steps (it reads the facts planted in the conversation, so what is
measured is what our graph does with its replies):

- 30 sessions over one user, overlapping: each restates facts others stated, some facts
  change value later (a new editor theme). After every commit: the share of active memories
  that duplicate another (goal 0.00) and the share that is stale (an older value of a fact
  restated since; goal 0.00);
- characters sent per commit, per new message, first commits vs last (goal: flat: a commit
  sends what is new, not the history);
- commit latency with 10,000 memories stored: phase 1 (claim + archive, ``wait=False``;
  goal < 10 ms) and phase 2 (summary, extraction, prefilter, decision, writes);
- prefilter recall@5: 200 stored memories, 100 restatements in other words; how often the
  restated memory is among the 5 hits (goal >= 0.9 with BM25 alone).
"""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.store.memory import InMemoryStore

from session_graph import Session
from session_graph.memory import MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.categories import memory_namespace, slug
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import prefilter
from session_graph.memory.recall import remember

FACT = re.compile(r"FACT\[(\w+)\|([\w ]+)\|([^\]]+)\]")
TOPICS = ["editor theme", "test runner", "shell", "deploy day", "coffee order", "team", "timezone", "language",
          "database", "code style"]
VALUES = ["alpha", "beta", "gamma", "delta"]


class ScriptedMemoryModel(BaseChatModel):
    """Plays summarize / extract / decide from the prompt it is sent; counts characters sent."""

    sent: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-memory"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        self.sent += len(text)
        system = str(messages[0].content)
        if "archive record" in system:
            reply = "# Session Summary\n**Overview**: preferences discussed | noted | done"
        elif "worth remembering" in system:
            body = str(messages[-1].content).split("Conversation:", 1)[-1]
            facts = {(c, k): v for c, k, v in FACT.findall(body)}  # the newest value of each fact in the stretch
            reply = json.dumps({"memories": [{"category": c, "key": k, "abstract": f"{k}: {v}", "content": f"The user's {k} is {v}."}
                                             for (c, k), v in facts.items()]})
        else:  # decide: same content -> skip, else update the key hit
            decisions = []
            for block in str(messages[-1].content).split("\n\n"):
                head = re.match(r"Candidate (\d+) ", block)
                if not head:
                    continue
                candidate = json.loads(block.splitlines()[1])
                refs = re.findall(r"^  (m\d+|c\d+) \[([^\]]*)\]: [^\n]*\n    (.*)$", block, re.M)
                target = next((r for r in refs if r[0].startswith("m") and r[1] == slug(candidate["key"] or "")), None)
                if target is None:
                    decisions.append({"candidate": int(head.group(1)), "op": "create"})
                elif target[2] == candidate["content"]:
                    decisions.append({"candidate": int(head.group(1)), "op": "skip", "targets": [target[0]]})
                else:
                    decisions.append({"candidate": int(head.group(1)), "op": "update", "targets": [target[0]],
                                      "content": candidate["content"]})
            reply = json.dumps({"decisions": decisions})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def sessions_bench() -> None:
    rng = random.Random(3)
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    truth: dict[str, str] = {}
    per_message: list[float] = []
    for number in range(30):
        model = ScriptedMemoryModel()
        session = Session(f"s{number}", model=model, memory=memory)
        for _ in range(3):
            new = 0
            for _ in range(4):
                topic = rng.choice(TOPICS)
                if topic not in truth or rng.random() < 0.15:
                    truth[topic] = rng.choice(VALUES)
                session.append_message({"role": "user", "content": f"By the way FACT[preferences|{topic}|{truth[topic]}] ok?"})
                session.append_message({"role": "assistant", "content": "Noted, thanks. " * rng.randint(1, 5)})
                new += 2
            before = model.sent
            result = session.commit()
            assert result["status"] == "committed", result
            per_message.append((model.sent - before) / new)
    items = [i.value for i in memory.memory_store.search(("user", "alice", "memories", "preferences"), filter={"status": "active"}, limit=10_000)]
    topics = [v["abstract"].split(":")[0] for v in items]  # the fact an item is about, whatever its key
    duplicates = (len(topics) - len(set(topics))) / max(len(topics), 1)
    stale = sum(1 for v, t in zip(items, topics, strict=True) if v["content"] != f"The user's {t} is {truth.get(t)}.") / max(len(items), 1)
    first, last = statistics.mean(per_message[:15]), statistics.mean(per_message[-15:])
    print(f"  30 sessions, 90 commits: {len(items)} active memories for {len(truth)} facts; "
          f"duplicate share {duplicates:.2f} (goal 0.00), stale share {stale:.2f} (goal 0.00)")
    print(f"  characters sent per new message: first 15 commits {first:,.0f}, last 15 {last:,.0f} = {last / first:.2f}x (flat: ~1)")


def latency_bench() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    for i in range(10_000):  # distinct facts, written as remember() writes a new one, without its O(stored) check
        category = ("preferences", "entities", "events")[i % 3]
        content = f"Fact number {i} about item {i * 7919 % 10_007} in the archive."
        candidate = {"category": category, "key": f"item {i}", "abstract": content, "overview": "", "content": content}
        (op,) = create_plan([candidate], [list(memory_namespace(category, memory.user, memory.agent))])
        apply_op(memory.memory_store, op, f"seed/{i}", [{"source": "seed"}], "2026-01-01T00:00:00Z")
    phase1, phase2 = [], []
    session = Session("lat", model=ScriptedMemoryModel(), memory=memory)
    for round_ in range(20):
        session.append_message({"role": "user", "content": f"FACT[preferences|topic {round_}|value {round_}] please remember"})
        session.append_message({"role": "assistant", "content": "Will do."})
        start = time.perf_counter()
        assert session.commit(wait=False)["status"] == "archived"
        middle = time.perf_counter()
        assert session.commit()["status"] == "committed"
        end = time.perf_counter()
        phase1.append(middle - start)
        phase2.append(end - middle)
    print(f"  10,000 memories stored: phase 1 (claim + archive) {statistics.median(phase1) * 1e3:.2f} ms (goal < 10), "
          f"phase 2 (summary .. finalize) {statistics.median(phase2) * 1e3:.1f} ms (median of 20)")


def recall_bench() -> None:
    rng = random.Random(5)
    store = InMemoryStore()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    subjects = ["postgres replica", "redis cache", "kafka topic", "nginx config", "terraform module", "grafana board",
                "celery worker", "react form", "django admin", "docker image"]
    stored = []
    for _ in range(200):
        subject, detail = rng.choice(subjects), rng.randint(1, 10_000)
        content = f"The user maintains the {subject} number {detail} for the {rng.choice(['billing', 'search', 'auth', 'ops'])} team."
        remember(memory, content, "entities", key=f"{subject} {detail}")
        stored.append((f"{subject} {detail}".replace(" ", "_"), subject, detail))
    found = 0
    namespace = memory_namespace("entities", "alice", "coder")
    probes = rng.sample(stored, 100)
    for key, subject, detail in probes:
        restated = {"category": "entities", "key": None, "abstract": f"owns {subject} {detail}",
                    "content": f"Alice is responsible for {subject} {detail} these days."}
        (hits,) = prefilter(store, [restated], [namespace], top_k=5)
        found += any(h["key"] == key for h in hits.values())
    print(f"  prefilter recall@5 on 100 restated memories among 200: {found / len(probes):.2f} (goal >= 0.9, BM25 only)")


def main() -> None:
    print("1. overlapping sessions")
    sessions_bench()
    print("2. commit latency")
    latency_bench()
    print("3. prefilter recall")
    recall_bench()


if __name__ == "__main__":
    main()
