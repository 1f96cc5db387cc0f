"""``async with SessionManager(...)`` closes the store on the way out, as ``with`` does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.messages import HumanMessage

from session_graph import SessionManager


def test_async_with_saves_nothing_extra_and_closes_the_store(tmp_path: Path) -> None:
    closed: list[bool] = []

    async def run() -> None:
        async with SessionManager(tmp_path) as manager:
            session = manager.get_or_create("k")
            session.append_message(HumanMessage(content="hello", id="m1"))
            await manager.asave(session)
            real = manager.store.close
            manager.store.close = lambda: (closed.append(True), real())[1]  # type: ignore[method-assign]

    asyncio.run(run())
    assert closed == [True]
    with SessionManager(tmp_path) as again:
        assert [m.content for m in again.get("k").full_chat_history] == ["hello"]
