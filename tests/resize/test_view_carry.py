"""The carried view (``ViewBuilder``: the last view extended or rebased) against a view built
anew, after the changes a carried view must notice."""

from __future__ import annotations

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
