"""The carried view (``ViewBuilder``: the last view extended or rebased) against a view built
anew, after the changes a carried view must notice."""

from __future__ import annotations

import dataclasses

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from session_graph import Session
from session_graph.resize.view import build_view


def _same_as_a_full_build(session: Session) -> None:
    view = session.view()
    full = build_view(session.state, session._ledger, session.settings.resolved())
    assert [m.id for m in view.messages] == [m.id for m in full.messages]
    assert (view.tokens, view.truncated, view.elided) == (full.tokens, full.truncated, full.elided)


def test_a_view_after_a_counter_swap_to_one_of_the_same_name_is_recounted() -> None:
    # two users' lambdas are both ``custom:<lambda>``: the carried view must not take the
    # second for the first (it kept the first one's token counts)
    session = Session().configure(limit={"tokens": 400}, every_n_turns=0)
    session.append_message(SystemMessage("be brief", id="sys"))
    session.set_token_counter(lambda text: len(text.split()))
    for n in range(3):
        session.append_message(HumanMessage(f"question {n} " + "word " * 10, id=f"u{n}"))
        session.view()
        session.append_message(AIMessage(f"answer {n} " + "word " * 10, id=f"a{n}"))
    session.view()
    session.set_token_counter(lambda text: len(text))  # another counter, the same name
    assert session.counter.name == "custom:<lambda>"
    session.append_message(HumanMessage("next " + "word " * 10, id="u9"))
    _same_as_a_full_build(session)


def _chat(session: Session, turns: int) -> None:
    session.append_message(SystemMessage("sys", id="sys"))
    for n in range(turns):
        session.append_message(HumanMessage(f"q{n} hello there", id=f"u{n}"))
        session.view()  # the model is called: the next view is carried from this one
        session.append_message(AIMessage(f"a{n} fine", id=f"a{n}"))
    session.view()


def test_a_summary_edited_in_place_is_in_the_next_view() -> None:
    # the judge sees it (its bounds check the summary); the view must show it too
    session = Session().configure(mode="summary", limit={"tokens": 2000}, every_n_turns=0)
    session.state.memo = {"summary": "short"}
    _chat(session, 3)
    session.memo["summary"] = "a much longer summary " * 20
    _same_as_a_full_build(session)  # nothing appended: the cached view must not be returned
    session.append_message(HumanMessage("next", id="u9"))
    _same_as_a_full_build(session)  # appended: the carried view must not keep the old summary


def test_a_memo_replaced_by_hand_twice_is_in_the_next_view() -> None:
    # the second new dict may take the first one's freed address (CPython reuses it): a memo
    # known by id() and size alone looked unchanged and the view kept the first memo's message
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: memo)
    session.configure(mode="memo", limit={"tokens": 2000}, every_n_turns=0)
    session.state.memo = {"facts": ["short"]}
    _chat(session, 3)
    session.state.memo = {"facts": ["a much longer fact " * 20]}
    session.state.memo = {"facts": ["another much longer fact " * 20]}
    _same_as_a_full_build(session)
    session.append_message(HumanMessage("next", id="u9"))
    _same_as_a_full_build(session)


def test_a_window_whose_unshown_part_changed_is_not_carried() -> None:
    # the last view showed u3, a3 only (a2 was too big); a restore puts a shorter message in
    # a2's place: the window ends with the same objects, but a full build now fits u2 again
    session = Session().configure(limit={"tokens": 120}, every_n_turns=0)
    for n, size in ((1, 10), (2, 200), (3, 10)):
        session.append_message(HumanMessage(f"q{n} " + "w " * 10, id=f"u{n}"))
        session.append_message(AIMessage(f"a{n} " + "w " * size, id=f"a{n}"))
    assert [m.id for m in session.view().messages] == ["u3", "a3"]
    window = session.current_chat_history
    shorter = [window[2], AIMessage("a2 short", id="a2x"), window[4], window[5]]
    session.restore(dataclasses.replace(session.state, current_chat_history=shorter))
    _same_as_a_full_build(session)
    assert [m.id for m in session.view().messages] == ["u2", "a2x", "u3", "a3"]


def test_a_restore_with_another_system_prompt_and_the_same_window_list_shows_the_new_prompt() -> None:
    session = Session().configure(limit={"tokens": 500}, every_n_turns=0)
    session.append_message(SystemMessage("old prompt", id="sys"))
    for n in range(3):
        session.append_message(HumanMessage(f"q{n}", id=f"u{n}"))
        session.view()
        session.append_message(AIMessage(f"a{n}", id=f"a{n}"))
    window = [m for m in session.current_chat_history if m.id != "sys"]  # the prompt travels in the view
    session.restore(dataclasses.replace(session.state, current_chat_history=window))
    session.view()
    full = [SystemMessage("a brand new and longer system prompt", id="sys2"), *session.full_chat_history[1:]]
    session.restore(dataclasses.replace(session.state, full_chat_history=full))  # the window is the same list
    session.append_message(HumanMessage("next", id="u9"))
    _same_as_a_full_build(session)
    assert session.view().messages[0].content == "a brand new and longer system prompt"
