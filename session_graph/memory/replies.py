"""What the commit models must answer, and how a reply is read.

Replies are read as real models write them (:mod:`session_graph.llm.replies`: fences with any
tag, prose around one JSON object, ``<think>``, lenient JSON, the output of structured output)
and validated with pydantic. Anything else (no object, truncated JSON, several objects, a wrong
shape, an unknown category, a decision naming an id it was not shown) is a
``MemoryReplyError`` naming the step and the reason, which makes the commit ``partial``: never
a silent 0.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from session_graph.errors import MemoryReplyError, ModelReplyError
from session_graph.llm.replies import structured_data, summary_text, wanted_object
from session_graph.memory.categories import CATEGORIES
from session_graph.memory.items import clean_terms

__all__ = ["Candidate", "Decision", "Extraction", "parse_decisions", "parse_extraction", "parse_summary"]


class Candidate(BaseModel):
    """One memory the extraction model proposes."""

    model_config = ConfigDict(extra="ignore")
    category: str
    key: str | None = Field(None, description="the merge key (topic or name) of a mergeable category")
    abstract: str = Field(min_length=1)
    overview: str = ""
    content: str = Field(min_length=1)
    terms: list[str] = Field(default_factory=list, description=(
        "retrieval terms: other names, synonyms, the broader term, the key words in the other language"))

    @field_validator("terms", mode="before")
    @classmethod
    def _terms(cls, value: Any) -> list[str]:
        """Whatever the model gave (missing, a string, numbers, nested, a mapping): a clean list, never an error."""
        return clean_terms(value)


class Extraction(BaseModel):
    """The reply the extraction model must give (also its structured-output schema)."""

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


def _json(reply: Any, step: str, key: str, one: tuple[str, ...], schema: type[BaseModel]) -> Any:
    """The JSON object of a commit reply, ``{key: [...]}``; a bare list item (an object with
    the ``one`` fields) counts as a list of one. ``reply`` may be a structured-output result."""
    if isinstance(reply, dict) and "raw" in reply:
        parsed, reply = structured_data(reply, schema)
        if parsed is not None:
            return parsed.model_dump()

    def shape(data: dict[str, Any]) -> dict[str, Any]:
        if key not in data and all(field in data for field in one):
            return {key: [data]}
        return data

    try:
        return wanted_object(reply, step, shape)
    except ModelReplyError as error:
        raise MemoryReplyError(f"{error} ({error.reason})", step=step) from None


def parse_summary(reply: Any) -> tuple[str, str]:
    """(overview, abstract) of a summary reply: the Markdown, and its one-line overview."""
    try:
        text = summary_text(reply)
    except ModelReplyError:
        raise MemoryReplyError("the summarize model's reply is empty.", step="summarize") from None
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
    data = _json(reply, "extract", "memories", ("category", "content"), Extraction)
    try:
        candidates = Extraction.model_validate(data).memories
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
    data = _json(reply, "decide", "decisions", ("candidate", "op"), _Decisions)
    try:
        return _Decisions.model_validate(data).decisions
    except ValidationError as error:
        raise MemoryReplyError(
            f'the decide model\'s reply must be {{"decisions": [{{"candidate", "op", "targets", "content"}}]}}: '
            f"{error.errors()[0]['loc']}: {error.errors()[0]['msg']}", step="decide",
        ) from None
