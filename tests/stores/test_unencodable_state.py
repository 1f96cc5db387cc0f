"""A memo or metadata edited in place to hold a lone surrogate (text decoded with
``surrogateescape``): the save is refused with a ``StoreError`` naming which and saying nothing
was written, not a bare ``UnicodeEncodeError`` from the store's encoder or driver; the stored
session is as it was, and once the value is replaced the save writes everything, once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from stores_util import BACKENDS, fresh_tenant, make_store

from session_graph import StoreError
from session_graph.stores import SessionManager


@pytest.mark.parametrize("field", ["memo", "metadata"])
@pytest.mark.parametrize("kind", BACKENDS)
def test_a_lone_surrogate_in_the_memo_or_metadata_is_named_and_nothing_is_written(kind: str, field: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    tenant = fresh_tenant()
    with SessionManager(store, tenant=tenant) as manager:
        session = manager.get_or_create("k")
        session.append_message({"role": "user", "content": "saved"})
        manager.save(session)
        session.append_message({"role": "assistant", "content": "pending"})
        getattr(session, field)["note"] = "bad \ud800 text"
        with pytest.raises(StoreError, match=rf"{field}\b.*lone surrogate .*Nothing was (written|saved)"):
            manager.save(session)
        with SessionManager(make_store(kind, tmp_path), tenant=tenant) as other:
            assert [m.text for m in other.get("k").full_chat_history] == ["saved"]  # the store as it was
        getattr(session, field)["note"] = "fixed"
        manager.save(session)
    with SessionManager(make_store(kind, tmp_path), tenant=tenant) as again:
        loaded = again.get("k")
        assert [m.text for m in loaded.full_chat_history] == ["saved", "pending"]
        assert getattr(loaded, field)["note"] == "fixed"


def test_the_async_save_names_it_too(tmp_path: Path) -> None:
    async def run() -> None:
        async with SessionManager(tmp_path) as manager:
            session = await manager.aget_or_create("k")
            session.append_message({"role": "user", "content": "x"})
            session.memo["k"] = "\udcff"
            with pytest.raises(StoreError, match=r"memo\b.*lone surrogate"):
                await manager.asave(session)

    asyncio.run(run())
