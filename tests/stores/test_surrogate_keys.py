"""A session key or tenant holding a lone surrogate (text decoded with ``surrogateescape``, a
JSON ``"\\ud800"`` escape) is refused with an ``InvalidKeyError`` naming it, on every store,
the manager and the agent's thread id alike: no UTF-8 file name, SQL text or label holds it,
and the stores failed with a bare ``UnicodeEncodeError`` (the JSONL store) or a driver error.
Nothing stored changes."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage
import pytest
from stores_util import BACKENDS, fresh_tenant, make_store

from session_graph import InvalidKeyError, Session
from session_graph.integrations import SessionBinding
from session_graph.stores import SessionManager


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_key_with_a_lone_surrogate_is_refused_by_name(kind: str, tmp_path: Path) -> None:
    with SessionManager(make_store(kind, tmp_path), tenant=fresh_tenant()) as manager:
        session = manager.get_or_create("kept")
        session.append_message({"role": "user", "content": "stays"})
        manager.save(session)
        for key in ("k\ud800", "\udcff", "caf\u00e9 \udc80"):
            with pytest.raises(InvalidKeyError, match="lone surrogate"):
                manager.get_or_create(key)
            with pytest.raises(InvalidKeyError, match="lone surrogate"):
                manager.save(Session(id=key))
        with pytest.raises(InvalidKeyError, match=r"tenant .* lone surrogate"):
            SessionManager(manager.store, tenant="acme\ud800")
        assert [m.text for m in manager.get("kept").full_chat_history] == ["stays"]
        assert [info.key for info in manager.list_sessions()] == ["kept"]


def test_an_agent_thread_id_with_a_lone_surrogate_is_refused_by_name(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        binding = SessionBinding(manager=manager)
        with pytest.raises(InvalidKeyError, match="lone surrogate"):
            binding.step([AIMessage(content="hi")], {"configurable": {"thread_id": "t\udfff"}}, save=True)


def test_unicode_keys_that_utf8_encodes_still_work(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        for key in ("café", "猫/42", "emoji 😀", "rtl \u202e"):
            session = manager.get_or_create(key)
            session.append_message({"role": "user", "content": key})
            manager.save(session)
    with SessionManager(tmp_path) as again:
        assert sorted(info.key for info in again.list_sessions()) == sorted(("café", "猫/42", "emoji 😀", "rtl \u202e"))
