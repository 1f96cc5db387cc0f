"""What the commit models must answer, and how a reply is read.

Replies are parsed with langchain-core's JSON-in-Markdown parser (a fence or a ``<think>``
block is fine) and validated with pydantic. Anything else (prose, truncated JSON, a wrong
shape, an unknown category, a decision naming an id it was not shown) is a
``MemoryReplyError`` naming the step, which makes the commit ``partial``: never a silent 0.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.exceptions import OutputParserException
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from session_graph.errors import MemoryReplyError
from session_graph.compression.memo import reply_text
from session_graph.memory.categories import CATEGORIES

__all__ = ["Candidate", "Decision", "parse_decisions", "parse_extraction", "parse_summary"]


class Candidate(BaseModel):
    """One memory the extraction model proposes."""

    model_config = ConfigDict(extra="ignore")
    category: str
    key: str | None = Field(None, description="the merge key (topic or name) of a mergeable category")
    abstract: str = Field(min_length=1)
    overview: str = ""
    content: str = Field(min_length=1)


class _Extraction(BaseModel):
    memories: list[Candidate]


class Decision(BaseModel):
    """The decide model's verdict on one candidate."""

    model_config = ConfigDict(extra="ignore")
    candidate: int = Field(ge=0)
    op: Literal["create", "update", "merge", "skip"]
    targets: list[str] = Field(default_factory=list)
    content: str | None = None
    abstract: str | None = None
    reason: str = ""


class _Decisions(BaseModel):
    decisions: list[Decision]


def _json(reply: Any, step: str) -> Any:
    text = reply_text(reply)
    if not text:
        raise MemoryReplyError(f"the {step} model's reply is empty.", step=step)
    try:
        return parse_json_markdown(text, parser=json.loads)
    except (OutputParserException, ValueError) as error:
        raise MemoryReplyError(f"the {step} model's reply is not JSON ({error}): {text[:200]!r}", step=step) from None


def parse_summary(reply: Any) -> tuple[str, str]:
    """(overview, abstract) of a summary reply: the Markdown, and its one-line overview."""
    text = reply_text(reply)
    if not text:
        raise MemoryReplyError("the summarize model's reply is empty.", step="summarize")
    abstract = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("**") and "**:" in stripped:
            abstract = stripped.split("**:", 1)[1].strip()
            break
    if not abstract:
        abstract = next((line.strip("# ").strip() for line in text.splitlines() if line.strip()), "")
    return text, abstract


def parse_extraction(reply: Any) -> list[Candidate]:
    """The candidates of an extraction reply ``{"memories": [...]}`` (an empty list is a valid answer)."""
    data = _json(reply, "extract")
    try:
        candidates = _Extraction.model_validate(data).memories
    except ValidationError as error:
        raise MemoryReplyError(
            f'the extract model\'s reply must be {{"memories": [{{"category", "abstract", "content", ...}}]}}: '
            f"{error.errors()[0]['loc']}: {error.errors()[0]['msg']}", step="extract",
        ) from None
    unknown = [c.category for c in candidates if c.category not in CATEGORIES]
    if unknown:
        raise MemoryReplyError(
            f"the extract model named unknown categories {unknown}; the categories are {', '.join(CATEGORIES)}.",
            step="extract",
        )
    return candidates


def parse_decisions(reply: Any) -> list[Decision]:
    """The decisions of a decide reply ``{"decisions": [...]}``."""
    data = _json(reply, "decide")
    try:
        return _Decisions.model_validate(data).decisions
    except ValidationError as error:
        raise MemoryReplyError(
            f'the decide model\'s reply must be {{"decisions": [{{"candidate", "op", "targets", "content"}}]}}: '
            f"{error.errors()[0]['loc']}: {error.errors()[0]['msg']}", step="decide",
        ) from None
