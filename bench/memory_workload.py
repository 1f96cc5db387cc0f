"""The realistic long-term-memory workload of ``bench_memory.py --realistic``.

One user, many overlapping sessions, over epochs: ten facts that change value between epochs
(three of them profile facts, all of which live in the one profile item), events and cases
that never change, three to six candidates per commit in every category, each session saying
things in its own words. A scripted model answers every prompt from what the prompt shows it
(the conversation for the extraction; the candidate and the memories shown under it for the
decision), as a careful model would, so every duplicate or stale memory left is ours.

Racing mode runs the sessions in 2-3 processes on one shared store; epochs are separated by a
barrier, so within an epoch every process states the same values (the truth is well defined)
while the commits of one epoch race each other.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

CHANGING: dict[str, tuple[str, list[str]]] = {
    "city": ("profile", ["Munich", "Berlin", "Lisbon", "Oslo"]),
    "job title": ("profile", ["data engineer", "engineering manager", "staff engineer"]),
    "employer": ("profile", ["Acme", "Globex", "Initech"]),
    "editor theme": ("preferences", ["dark", "light", "solarized"]),
    "test runner": ("preferences", ["pytest", "nox", "tox"]),
    "shell": ("preferences", ["zsh", "fish", "bash"]),
    "coffee order": ("preferences", ["flat white", "espresso", "oat latte"]),
    "project atlas": ("entities", ["in design", "in beta", "shipped"]),
    "team size": ("entities", ["four people", "six people", "nine people"]),
    "home server": ("entities", ["a NUC", "a Raspberry Pi", "a rack"]),
}
FIXED: dict[str, tuple[str, str]] = {
    "dentist appointment": ("events", "on 2026-03-04 at 9am"),
    "conference talk": ("events", "at PyCon on 2026-05-16"),
    "flat move": ("events", "to a new flat on 2026-07-01"),
    "flaky ci": ("cases", "fixed by pinning the docker image digest"),
    "slow migration": ("cases", "fixed by batching updates 1,000 rows at a time"),
}
TOPICS = {**{t: c for t, (c, _) in CHANGING.items()}, **{t: c for t, (c, _) in FIXED.items()}}
VALUES = {**{t: vs for t, (_, vs) in CHANGING.items()}, **{t: [v] for t, (_, v) in FIXED.items()}}
WORDINGS = [
    "The user's {topic} is {value}.",
    "{Topic}: {value} (as the user said).",
    "As of now, the user's {topic} is {value}.",
]
FACT = re.compile(r"FACT\[(\w+)\|([\w ]+)\|([^\]]+)\]")


def wording(topic: str, value: str, variant: int) -> str:
    return WORDINGS[variant % len(WORDINGS)].format(topic=topic, Topic=topic.capitalize(), value=value)


def facts_in(text: str) -> list[tuple[str, str]]:
    """(topic, value) of each fact stated in a text, one per line at most (what a reader sees)."""
    out = []
    for line in text.splitlines():
        low = line.casefold()
        for topic, values in VALUES.items():
            if topic in low:
                value = next((v for v in values if v.casefold() in low), None)
                if value is not None:
                    out.append((topic, value))
                break
    return out


class ScriptedMemoryModel(BaseChatModel):
    """Plays summarize / extract / decide from what each prompt shows; counts calls and characters."""

    sent: int = 0
    calls: int = 0
    variant: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-memory-realistic"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        self.sent += len(text)
        self.calls += 1
        system, body = str(messages[0].content), str(messages[-1].content)
        if "archive record" in system:
            reply = "# Session Summary\n**Overview**: the user's facts | noted | done"
        elif "worth remembering" in system:
            reply = json.dumps({"memories": self._extract(body.split("Conversation:", 1)[-1])})
        else:
            reply = json.dumps({"decisions": [d for block in re.split(r"\n\n(?=Candidate )", body)
                                              if (d := self._decide(block)) is not None]})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

    def _extract(self, conversation: str) -> list[dict[str, Any]]:
        newest = {topic: (category, value) for category, topic, value in FACT.findall(conversation)}
        out = []
        for topic, (category, value) in newest.items():
            out.append({"category": category, "key": None if category in ("events", "cases") else topic,
                        "abstract": f"{topic}: {value}", "content": wording(topic, value, self.variant)})
        return out

    def _decide(self, block: str) -> dict[str, Any] | None:
        head = re.match(r"Candidate (\S+) \((\w+);", block)
        if not head:
            return None
        ident, category = head.group(1), head.group(2)
        candidate = json.loads(block.splitlines()[1])
        (topic, value), = facts_in(candidate["content"])
        hits = [(ref, json.loads(shown)) for ref, shown in re.findall(r"^  (\w+): (\{.*\})$", block, re.M)]
        same = []  # refs holding this topic
        profile_ref = None
        for ref, hit in hits:
            key, lines = hit["key"], str(hit["content"]).splitlines()
            if key == "profile":
                profile_ref = (ref, lines)
            if any(t == topic for line in lines for t, _ in facts_in(line)):
                same.append((ref, lines))
        decision: dict[str, Any] = {"candidate": _ident(ident), "op": "create"}
        if not same and category == "profile" and profile_ref is not None:
            ref, lines = profile_ref
            decision = {**decision, "op": "update", "targets": [ref], "content": "\n".join([*lines, f"- {candidate['content']}"])}
        elif len(same) == 1 or (same and category not in ("preferences", "entities", "patterns")):
            ref, lines = same[0]
            current = [v for line in lines for t, v in facts_in(line) if t == topic]
            if current == [value] or category in ("events", "cases"):
                decision = {**decision, "op": "skip", "targets": [ref]}
            else:
                rewritten = [(f"- {candidate['content']}" if category == "profile" else candidate["content"])
                             if any(t == topic for t, _ in facts_in(line)) else line for line in lines]
                decision = {**decision, "op": "update", "targets": [ref], "content": "\n".join(dict.fromkeys(rewritten))}
        elif len(same) > 1:  # the same fact twice already: fold them into the newest value
            decision = {**decision, "op": "merge", "targets": [r for r, _ in same], "content": candidate["content"]}
        return decision


def _ident(text: str) -> Any:
    return int(text) if text.isdigit() else text


def schedule(seed: int, sessions: int = 24, epochs: int = 8, live: int = 3) -> list[dict[str, Any]]:
    """Per epoch: the truth, and what each live session says (user turns of 2-3 facts)."""
    rng = random.Random(seed)
    truth = {topic: values[0] for topic, values in VALUES.items()}
    out = []
    for epoch in range(epochs):
        if epoch:
            for topic, (_, values) in CHANGING.items():
                if rng.random() < 0.3:
                    truth[topic] = rng.choice([v for v in values if v != truth[topic]])
        said: dict[int, list[list[str]]] = {}
        for number in range(sessions):
            if not number * epochs // sessions <= epoch + live - 1 < number * epochs // sessions + live:
                continue
            turns = []
            for _ in range(rng.randint(1, 2)):
                topics = rng.sample(sorted(TOPICS), rng.randint(2, 3))
                turns.append([f"FACT[{TOPICS[t]}|{t}|{truth[t]}]" for t in topics])
            said[number] = turns
        out.append({"truth": dict(truth), "said": said})
    return out


def judge(units: list[tuple[str, str]], truth: dict[str, str], mentioned: set[str]) -> dict[str, Any]:
    """Duplicate and stale shares of memory units (an item, or one bullet of the profile)."""
    topics = [t for t, _ in units]
    duplicates = (len(topics) - len(set(topics))) / max(len(topics), 1)
    stale = sum(1 for t, v in units if truth.get(t) != v) / max(len(units), 1)
    return {"units": len(units), "facts": len(mentioned), "duplicate": duplicates, "stale": stale,
            "missing": len(mentioned - set(topics))}


def memory_units(store: Any, user: str, agent: str) -> list[tuple[str, str]]:
    """Every active memory as (topic, value): one per item, one per bullet of the profile."""
    units = []
    for prefix in (("user", user, "memories"), ("agent", agent, "memories")):
        for item in store.search(prefix, filter={"status": "active"}, limit=1_000_000):
            if item.namespace[2] != "memories":
                continue
            found = facts_in(item.value.get("content", ""))
            units.extend(found or [("?", item.value.get("content", "")[:40])])
    return units
