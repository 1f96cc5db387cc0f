"""The typed schema of a session's settings: every key, its type, its default and its meaning.

One pydantic model per section, ``extra="forbid"``: an unknown key is an error with a
did-you-mean, never silently stored. Each field's ``description`` is what an error says the
value must be, so adding a setting is one line here. ``session.custom`` is free-form, for a
user's own policies and handlers (credential-like names are refused there too).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["DEFAULT_MEMO_INSTRUCT", "SettingsModel"]

DEFAULT_MEMO_INSTRUCT = (
    "Update the memo dictionary based on the provided messages.",
    "Keep stable preferences, constraints, and facts that help future turns.",
    "Add new keys or update existing ones as needed.",
    "Return the updated memo dictionary.",
)


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    return value


def _budget(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 32:
        raise ValueError("below 32")
    return value


_RATIO = "a number in (0, 1], the share of the limit a prune keeps"
Ratio = Annotated[float, BeforeValidator(_number), Field(gt=0, le=1, strict=False)]
Count = Annotated[int, Field(ge=0)]
NonEmpty = Annotated[str, Field(min_length=1)]
Budget = Annotated[int, Field(ge=0), BeforeValidator(_budget)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ResizeSettings(_Section):
    every_n_turns: Count | None = Field(8, description="a whole number >= 0 or None (0/None disables)")
    max_messages_text_length: Count | None = Field(12_000, description="a whole number >= 0 or None (0/None disables)")
    max_keep_messages_count: Count | None = Field(None, description="a whole number >= 0 or None (0/None disables)")
    prune_to_ratio: Ratio | None = Field(None, description=_RATIO + ", or None (1.0 in lite mode, 0.8 otherwise)")


class MemoSettings(_Section):
    enabled: bool | None = Field(None, description="True, False or None (None: follow session.mode)")
    instruct: list[str] = Field(list(DEFAULT_MEMO_INSTRUCT), description="a list of instruction strings")
    chunk_tokens: Annotated[int, Field(gt=0)] | None = Field(
        None, description="a whole number > 0 (tokens a fold may send) or None (the token budget less the reserve, at least 2000)")
    fold_min_ratio: Ratio = Field(1.0, description="a number in (0, 1], the share of the limit that must wait to fold")


class LimitSettings(_Section):
    chars: Count | None = Field(None, description="a whole number >= 0 or None (0/None disables)")
    messages: Count | None = Field(None, description="a whole number >= 0 or None (0/None disables)")
    tokens: Budget | None = Field(None, description="0/None (no budget) or at least 32 tokens")


class TokenSettings(_Section):
    encoding: NonEmpty | None = Field(None, description="a non-empty string or None")
    model: NonEmpty | None = Field(None, description="a non-empty string or None")
    approximate: bool | None = Field(None, description="True, False or None")
    per_message: Count = Field(3, description="a whole number >= 0")
    per_name: Count = Field(1, description="a whole number >= 0")
    reply_priming: Count = Field(3, description="a whole number >= 0")
    prune_to_ratio: Ratio = Field(0.9, description=_RATIO)


class SummarySettings(_Section):
    reserve_tokens: Count = Field(512, description="a whole number >= 0")
    prompt: NonEmpty | None = Field(None, description="a non-empty string or None")


class ProfileSettings(_Section):
    max_items: Annotated[int, Field(gt=0)] = Field(30, description="a whole number > 0 (bullets the profile keeps)")
    max_chars: Annotated[int, Field(gt=0)] = Field(2000, description="a whole number > 0 (characters the profile keeps)")


class MemorySettings(_Section):
    keep_recent: Count = Field(0, description="a whole number >= 0 (newest messages a commit leaves unarchived)")
    trim_window: bool = Field(False, description="True or False (archived messages leave the window)")
    top_k: Annotated[int, Field(gt=0)] = Field(5, description="a whole number > 0 (similar memories shown per candidate)")
    max_input_chars: Annotated[int, Field(ge=1000)] = Field(
        24_000, description="a whole number >= 1000 (the longest transcript one commit prompt carries; longer archives go in chunks)")
    profile: ProfileSettings = Field(default_factory=ProfileSettings, description="a dict of profile settings")


class ViewSettings(_Section):
    system_messages: Literal["keep", "front", "merge"] = Field(
        "keep", description="'keep', 'front' or 'merge' (where the view puts system messages added mid-conversation)")


class SessionSection(_Section):
    mode: Literal["lite", "memo", "summary"] = Field("lite", description="'lite', 'memo' or 'summary'")
    resize: ResizeSettings = Field(default_factory=ResizeSettings, description="a dict of resize settings")
    memo: MemoSettings = Field(default_factory=MemoSettings, description="a dict of memo settings")
    limit: LimitSettings | None = Field(
        None, description="a dict like {'chars': 4000, 'messages': 40, 'tokens': 8000} or None"
    )
    tokens: TokenSettings = Field(default_factory=TokenSettings, description="a dict of token settings")
    summary: SummarySettings = Field(default_factory=SummarySettings, description="a dict of summary settings")
    memory: MemorySettings = Field(default_factory=MemorySettings, description="a dict of long-term memory settings")
    view: ViewSettings = Field(default_factory=ViewSettings, description="a dict of view settings")
    custom: dict[str, Any] = Field(default_factory=dict, description="a dict of your own settings")


class SettingsModel(_Section):
    """The whole settings tree: only the ``session`` namespace."""

    session: SessionSection = Field(default_factory=SessionSection, description="a dict of session settings")
