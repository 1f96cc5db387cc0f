"""judge_resize: the default policy's order, force, custom policies."""

from __future__ import annotations

from typing import Any

from conftest import Api, chat
import pytest

from session_graph import PolicyResultError, Session


def quiet(**limits: Any) -> Session:
    """A session with every default check disabled except the ones given."""
    session = Session()
    session.set_settings("session.resize.every_n_turns", limits.get("every_n_turns", 0))
    session.set_settings("session.resize.max_messages_text_length", limits.get("chars", 0))
    session.set_settings("session.resize.max_keep_messages_count", limits.get("messages"))
    return session


def test_chars_at_the_limit_decide_deep(api: Api) -> None:
    session = quiet(chars=50)
    session.append_message({"role": "user", "content": "01234567890123456789"})
    session.append_message({"role": "assistant", "content": "x"})
    assert api.judge(session) is None  # 25 + 11 chars < 50
    session.append_message({"role": "user", "content": "y" * 9})  # 36 + 14 = 50: at the limit
    assert api.judge(session) == {"type": "deep", "reason": "max_messages_text_length", "severity": 100}


def test_message_count_over_the_limit_decides_lite(api: Api) -> None:
    session = chat(quiet(messages=3), 2)
    assert api.judge(session) == {"type": "lite", "reason": "max_keep_messages_count", "severity": 50}


def test_every_n_turns_decides_lite_counting_from_the_last_resize(api: Api) -> None:
    session = chat(quiet(every_n_turns=2), 1)
    assert api.judge(session) is None
    chat(session, 1, start=1)
    assert api.judge(session) == {"type": "lite", "reason": "every_n_turns", "severity": 10}
    api.resize(session)
    assert session.last_resize_turn == 2 and api.judge(session) is None


def test_severity_order_when_several_fire(api: Api) -> None:
    session = chat(quiet(chars=20, messages=1, every_n_turns=1), 3)
    assert api.judge(session)["type"] == "deep"
    session.set_settings("session.resize.max_messages_text_length", 0)
    assert api.judge(session)["reason"] == "max_keep_messages_count"
    session.set_settings("session.resize.max_keep_messages_count", None)
    assert api.judge(session)["reason"] == "every_n_turns"


@pytest.mark.parametrize("disabled", [0, None])
def test_zero_or_none_disables_every_check(api: Api, disabled: Any) -> None:
    session = Session()
    for key in ("every_n_turns", "max_messages_text_length", "max_keep_messages_count"):
        session.set_settings(f"session.resize.{key}", disabled)
    chat(session, 50, size=500)
    assert api.judge(session) is None


@pytest.mark.parametrize(
    ("force", "expected"),
    [(True, "deep"), ("deep", "deep"), ("lite", "lite"), ("custom", "custom"), (1, "deep")],
)
def test_force(api: Api, force: Any, expected: str) -> None:
    assert api.judge(Session(), force) == {"type": expected, "reason": "force", "severity": 1000}


@pytest.mark.parametrize("force", [False, None, "", 0])
def test_falsy_force_asks_the_policy(api: Api, force: Any) -> None:
    assert api.judge(Session(), force) is None


@pytest.mark.parametrize(
    ("result", "expected"),
    [(None, None), ("lite", {"type": "lite"}), ({"type": "x", "reason": "r", "severity": 3, "meta": {"k": 1}},
                                                {"type": "x", "reason": "r", "severity": 3, "meta": {"k": 1}})],
)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_custom_policies_sync_or_async(api: Api, kind: str, result: Any, expected: Any) -> None:
    seen = []

    def sync_policy(full, current, settings):  # type: ignore[no-untyped-def]
        seen.append((len(full), len(current), settings["session.mode"]))
        return result

    async def async_policy(full, current, settings):  # type: ignore[no-untyped-def]
        return sync_policy(full, current, settings)

    session = chat(Session(policy_handler=sync_policy if kind == "sync" else async_policy), 1)
    assert api.judge(session) == expected
    assert seen == [(2, 2, "lite")]


@pytest.mark.parametrize("bad", [42, ["lite"], {"reason": "no type"}, {"type": 5}, ""])
def test_a_bad_policy_result_is_a_type_error(api: Api, bad: Any) -> None:
    session = Session().set_policy_handler(lambda full, current, settings: bad)
    with pytest.raises(TypeError, match="policy handler returned") as caught:
        api.judge(session)
    assert isinstance(caught.value, PolicyResultError)


def test_a_single_message_bigger_than_the_limit_does_not_fire_every_turn(api: Api) -> None:
    session = quiet(chars=100)
    session.append_message({"role": "user", "content": "short"})
    session.append_message({"role": "assistant", "content": "x" * 500})
    assert api.judge(session)["type"] == "deep"
    window = api.resize(session)
    assert [m.content for m in window] == ["x" * 500]  # kept: it is the newest message
    assert api.judge(session) is None  # nothing left to prune: no deep on every judge
    session.append_message({"role": "user", "content": "next"})
    assert api.judge(session)["type"] == "deep"  # now the big one can go
    assert [m.content for m in api.resize(session)] == ["next"]
    assert api.judge(session) is None
