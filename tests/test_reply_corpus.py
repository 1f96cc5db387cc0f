"""A generated corpus of reply shapes, as real models write them: fence tags, prose around the
object, ``<think>`` blocks, the wrapped and the bare memo, single quotes, Python literals,
trailing commas; and the ones to refuse: cut mid-object, two different objects, prose only.

Every reply holding one complete JSON object of the wanted shape is accepted and gives exactly
that object; every other one is refused with a reason, never stored as something else.
(Values are JSON values without backticks or ``<``: a value holding a fence or a think tag
would change what the reply says, not how it is written.)
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
import pytest

from session_graph import MemoryReplyError, MemoUpdateError, ModelReplyError
from session_graph.compression.memo import parse_memo_reply
from session_graph.memory.replies import parse_decisions

TEXT = st.text(st.characters(blacklist_characters="`<", blacklist_categories=("Cs",)), max_size=12)
KEYS = TEXT.filter(lambda key: key != "memo")
SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | TEXT
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8)
MEMOS = st.dictionaries(KEYS, VALUES, max_size=5)
STYLES = st.sampled_from(["json", "indented", "single", "python", "trailing"])
FENCES = st.sampled_from([None, "", "json", "JSON", "jsonc", "json5", "javascript", "text", "memo", "~~~"])
BEFORE = st.sampled_from(["", "Here is the updated memo:\n", "Sure! Here's what I kept.\n\n", "Updated memo: "])
AFTER = st.sampled_from(["", "\nLet me know if anything else should go in.", "\n\nI merged the two budget facts."])
THINK = st.one_of(st.just(""), st.text(max_size=40).map(lambda t: f"<think>{t.replace('</think>', '')}</think>\n"))


def render(value: Any, style: str) -> str:
    """``value`` written the way a model might: strict JSON, or single quotes, Python literals, trailing commas."""
    if style in ("json", "indented"):
        return json.dumps(value, indent=2 if style == "indented" else None, ensure_ascii=False)
    comma = "," if style == "trailing" else ""
    if isinstance(value, dict):
        items = [f"{render(k, style)}: {render(v, style)}" for k, v in value.items()]
        return "{" + ", ".join(items) + (comma if items else "") + "}"
    if isinstance(value, list):
        items = [render(v, style) for v in value]
        return "[" + ", ".join(items) + (comma if items else "") + "]"
    if isinstance(value, str):
        if style == "trailing":
            return json.dumps(value, ensure_ascii=False)
        body = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
        return "'" + body + "'"
    if style == "python" and (value is None or isinstance(value, bool)):
        return repr(value)
    return json.dumps(value)


def wrap(obj: str, fence: str | None, before: str, after: str, think: str) -> str:
    if fence is None:
        body = obj
    elif fence == "~~~":
        body = f"~~~\n{obj}\n~~~"
    else:
        body = f"```{fence}\n{obj}\n```"
    return f"{think}{before}{body}{after}"


REPLY = dict(fence=FENCES, before=BEFORE, after=AFTER, think=THINK, style=STYLES)
CORPUS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CORPUS
@given(memo=MEMOS, wrapped=st.booleans(), **REPLY)
def test_one_complete_memo_in_any_shape_is_accepted_as_exactly_that(memo: dict[str, Any], wrapped: bool, **shape: Any) -> None:
    style = shape.pop("style")
    wrapped = wrapped or not memo  # an empty memo is only taken when asked for as {"memo": {}} (a bare {} would wipe it)
    obj = render({"memo": memo} if wrapped else memo, style)
    assert parse_memo_reply(AIMessage(content=wrap(obj, **shape))) == memo


@CORPUS
@given(memo=MEMOS.filter(bool), wrapped=st.booleans(), cut=st.floats(0, 1, exclude_max=True), **REPLY)
def test_a_memo_cut_mid_object_is_refused_with_a_reason(
    memo: dict[str, Any], wrapped: bool, cut: float, **shape: Any
) -> None:
    style = shape.pop("style")
    obj = render({"memo": memo} if wrapped else memo, style)
    prefix = obj[: 1 + int(cut * (len(obj) - 1))]  # at least the "{", never the closing "}"
    fence, think, before = shape["fence"], shape["think"], shape["before"]
    reply = f"{think}{before}" + (prefix if fence is None else f"```{fence if fence != '~~~' else ''}\n{prefix}")
    with pytest.raises(MemoUpdateError) as caught:
        parse_memo_reply(AIMessage(content=reply))
    assert isinstance(caught.value.__cause__, ModelReplyError) and caught.value.__cause__.reason


@CORPUS
@given(first=MEMOS, second=MEMOS, **REPLY)
def test_two_different_objects_are_refused_as_ambiguous(first: dict[str, Any], second: dict[str, Any], **shape: Any) -> None:
    style = shape.pop("style")
    if first == second:
        second = {**second, "extra": 1}
    one, two = render({"memo": first}, style), render({"memo": second}, style)
    reply = wrap(one, **shape) + "\n\nOr, shorter:\n" + wrap(two, **shape)
    with pytest.raises(MemoUpdateError) as caught:
        parse_memo_reply(AIMessage(content=reply))
    assert caught.value.__cause__.reason == "several JSON objects"  # type: ignore[union-attr]


@CORPUS
@given(prose=st.text(st.characters(blacklist_characters="{`<", blacklist_categories=("Cs",)), max_size=80), think=THINK)
def test_prose_without_an_object_is_refused(prose: str, think: str) -> None:
    with pytest.raises(MemoUpdateError) as caught:
        parse_memo_reply(AIMessage(content=think + prose))
    assert caught.value.__cause__.reason in ("no JSON object", "empty reply")  # type: ignore[union-attr]


DECISIONS = st.lists(
    st.fixed_dictionaries({"candidate": st.integers(0, 9), "op": st.sampled_from(["create", "update", "merge", "skip"]),
                           "targets": st.lists(st.sampled_from(["m1", "m2"]), max_size=2)}),
    min_size=1, max_size=3,
)


@CORPUS
@given(decisions=DECISIONS, cut=st.booleans(), **REPLY)
def test_decide_replies_in_any_shape(decisions: list[dict[str, Any]], cut: bool, **shape: Any) -> None:
    style = shape.pop("style")
    obj = render({"decisions": decisions}, style)
    if cut:
        with pytest.raises(MemoryReplyError, match="truncated JSON object"):
            parse_decisions(AIMessage(content=wrap(obj[:-1], None, shape["before"], "", shape["think"])))
        return
    parsed = parse_decisions(AIMessage(content=wrap(obj, **shape)))
    assert [d.model_dump(include={"candidate", "op", "targets"}) for d in parsed] == decisions
