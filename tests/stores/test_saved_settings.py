"""A save writes the settings from one copy shared until they change (``SessionSettings.saved``):
whoever edits that copy (a store normalising the document it was handed, a caller) must not
change what the next save writes."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from session_graph import JsonlStore, SessionManager
from session_graph.settings import SessionSettings


def test_an_edited_shared_copy_is_not_handed_out_again() -> None:
    settings = SessionSettings({"session": {"limit": {"tokens": 4000}}})
    settings.saved()["session"]["limit"]["tokens"] = 1  # someone edits what they were handed
    assert settings.saved()["session"]["limit"]["tokens"] == 4000
    assert settings.saved() == settings.to_dict()


class EditingStore(JsonlStore):
    """A store that edits the state document it was handed after writing it (here: the budget)."""

    def update(self, tenant: str, key: str, fn: Any, **options: Any) -> int:
        handed: list[dict[str, Any]] = []

        def spy(stored: Any) -> Any:
            change = fn(stored)
            if change is not None:
                handed.append(change.state)
            return change

        version = super().update(tenant, key, spy, **options)
        for state in handed:
            state["settings"]["session"]["limit"]["tokens"] = 1
        return version


def test_a_store_that_edits_the_document_it_was_handed_does_not_change_the_next_save(tmp_path: Any) -> None:
    manager = SessionManager(EditingStore(tmp_path))
    session = manager.get_or_create("k").configure(limit={"tokens": 4000})
    session.append_message(HumanMessage(content="one", id="m1"))
    manager.save(session)
    session.append_message(HumanMessage(content="two", id="m2"))
    manager.save(session)
    assert session.settings.resolved().tokens == 4000
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert loaded is not None and loaded.settings.resolved().tokens == 4000
