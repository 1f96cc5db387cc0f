"""Settings: defaults, dotted keys, replacement, precedence, sugar, validation."""

from __future__ import annotations

import pytest

from session_graph import DEFAULT_MEMO_INSTRUCT, Session, SessionSettings, SettingsError


def test_defaults_match_the_spec() -> None:
    settings = Session().settings
    assert settings["session.resize.every_n_turns"] == 8
    assert settings["session.resize.max_messages_text_length"] == 12_000
    assert settings["session.resize.max_keep_messages_count"] is None
    assert settings["session.mode"] == "lite"
    assert settings["session.memo.enabled"] is None  # unset
    assert settings["session.limit"] is None  # unset
    assert settings["session.memo.instruct"] == list(DEFAULT_MEMO_INSTRUCT) and len(DEFAULT_MEMO_INSTRUCT) == 4
    limits = settings.resolved()
    assert (limits.chars, limits.messages, limits.every_n_turns, limits.memo_enabled) == (12_000, 0, 8, False)


def test_dotted_reads_and_writes_replace_never_merge() -> None:
    session = Session()
    session.set_settings("session.memo.instruct", ["only this"])
    assert session.settings["session.memo.instruct"] == ["only this"]
    session.set_settings("session.resize", {"every_n_turns": 3})
    assert session.settings["session.resize"] == {"every_n_turns": 3}
    assert session.settings.resolved().chars == 12_000  # a replaced subtree falls back to defaults
    session.set_settings("session.custom.knob", 5)  # custom policies may keep their own keys
    assert session.settings["session.custom"] == {"knob": 5}
    with pytest.raises(KeyError):
        session.settings["session.nothing.here"]


def test_limit_wins_over_resize_keys() -> None:
    session = Session()
    session.set_settings("session.resize.max_messages_text_length", 100)
    session.set_settings("session.resize.max_keep_messages_count", 10)
    session.set_settings("session.limit", {"chars": 50})
    limits = session.settings.resolved()
    assert (limits.chars, limits.messages) == (50, 10)
    session.set_settings("session.limit.messages", 4)
    assert session.settings.resolved().messages == 4
    session.set_settings("session.limit", {"chars": 0})  # 0 in the limit disables, it is not "unset"
    assert session.settings.resolved().chars == 0


def test_explicit_memo_enabled_wins_over_mode() -> None:
    session = Session()
    session.set_settings("session.mode", "memo")
    assert session.settings.resolved().memo_enabled is True
    session.set_settings("session.memo.enabled", False)
    assert session.settings.resolved().memo_enabled is False
    session.set_settings("session.mode", "lite")
    session.set_settings("session.memo.enabled", True)
    assert session.settings.resolved().memo_enabled is True


def test_legacy_keys_are_not_honoured() -> None:
    session = Session()
    with pytest.warns(DeprecationWarning, match="not honoured"):
        session.set_settings("session.resize.max_current_chars", 5)
    with pytest.warns(DeprecationWarning, match="max_keep_messages_count"):
        session.set_settings("session.resize.keep_last_messages", 1)
    assert session.settings.resolved().chars == 12_000
    assert session.settings.resolved().messages == 0


def test_configure_and_sugar() -> None:
    session = Session().configure(mode="memo", limit={"chars": 4000, "messages": 30}, every_n_turns=3)
    limits = session.settings.resolved()
    assert (limits.mode, limits.chars, limits.messages, limits.every_n_turns, limits.memo_enabled) == ("memo", 4000, 30, 3, True)
    session.set_settings("session.memo.enabled", True)
    session.use_lite(chars=20, messages=1)
    limits = session.settings.resolved()
    assert (limits.mode, limits.memo_enabled, limits.chars, limits.messages) == ("lite", False, 20, 1)
    session.use_memo(chars=30)
    limits = session.settings.resolved()
    assert (limits.mode, limits.memo_enabled, limits.chars, limits.messages) == ("memo", True, 30, 0)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("session.mode", "heavy", "'lite', 'memo' or 'summary'"),
        ("session.resize.every_n_turns", -1, ">= 0"),
        ("session.resize.every_n_turns", True, ">= 0"),
        ("session.limit", {"bytes": 5}, "only 'chars', 'messages' and 'tokens'"),
        ("session.limit", [1, 2], "must be a dict"),
        ("session.memo.enabled", "yes", "True, False or None"),
        ("session.memo.instruct", "one string", "list of instruction strings"),
        ("session.resize.prune_to_ratio", 0, "(0, 1]"),
        ("openai.api_key", "sk-...", "outside the 'session.' namespace"),
        ("session..mode", "lite", "empty part"),
    ],
)
def test_invalid_settings_raise_and_change_nothing(key: str, value: object, words: str) -> None:
    session = Session()
    before = session.settings.to_dict()
    with pytest.raises(SettingsError, match=words.replace("(", r"\(").replace("[", r"\[").replace("]", r"\]")):
        session.set_settings(key, value)
    assert session.settings.to_dict() == before


def test_configure_is_all_or_nothing() -> None:
    session = Session()
    with pytest.raises(SettingsError):
        session.configure(mode="memo", limit={"chars": -5})
    assert session.settings["session.mode"] == "lite"


def test_settings_accept_nested_or_dotted_dicts() -> None:
    nested = SessionSettings({"session": {"limit": {"chars": 10}, "mode": "memo"}})
    dotted = SessionSettings({"session.limit": {"chars": 10}, "session.mode": "memo"})
    assert nested == dotted
    assert Session(settings=nested).settings.resolved().chars == 10


def test_a_token_budget_replaces_the_char_default() -> None:
    session = Session().configure(limit={"tokens": 1000})
    limits = session.settings.resolved()
    assert (limits.tokens, limits.chars, limits.prune_tokens) == (1000, 0, 900)
    session.configure(limit={"tokens": 1000, "chars": 5000})
    assert session.settings.resolved().chars == 5000
    with pytest.raises(SettingsError, match="at least 32 tokens"):
        session.configure(limit={"tokens": 10})
