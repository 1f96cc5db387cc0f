"""A session whose first messages were folded out of the window, for the recall tests."""

from __future__ import annotations

from typing import Any

from session_graph import Session


def fold_away(session: Session, opening: list[dict[str, Any]], question: str, turns: int,
              talk: str = "small talk {i}") -> Session:
    """Under a 6-message limit: ``opening``, then ``turns`` exchanges of small talk, a forced
    resize, then ``question``; the first opening message is no longer in the window."""
    session.set_settings("session.limit", {"messages": 6})
    for message in opening:
        session.append_message(message)
    for i in range(turns):
        session.append_message({"role": "user", "content": talk.format(i=i)})
        session.append_message({"role": "assistant", "content": f"reply {i}"})
    session.resize(force=True)
    session.append_message({"role": "user", "content": question})
    assert session.full_chat_history[0] not in session.current_chat_history
    return session
