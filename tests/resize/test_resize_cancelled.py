"""A direct async resize cancelled while its model call is awaited (the resize's guard and its
failure record are plain try blocks since r29): the session is left as it was, may resize again,
the run's config is reset, and the trace says the run failed (``CancelledError``)."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import chat, memo_reply
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables.config import var_child_runnable_config

from session_graph import Session
from session_graph.resize import run as run_module


class _Held(GenericFakeChatModel):
    """A chat model whose first async call waits until cancelled (``entered`` set once it waits);
    the next ones answer its messages."""

    entered: Any = None

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            await asyncio.Event().wait()  # never set: only a cancel ends it
        return await super()._agenerate(*args, **kwargs)


def test_a_cancelled_async_resize_leaves_the_session_as_it_was(monkeypatch: Any) -> None:
    directs: list[bool] = []
    real = run_module.execute
    monkeypatch.setattr(run_module, "execute", lambda *a, **k: directs.append(True) or real(*a, **k))

    async def scenario() -> None:
        model = _Held(messages=iter([AIMessage(content=memo_reply({"facts": ["x"]}))]), entered=asyncio.Event())
        session = chat(Session(model=model).use_memo(messages=4), 6)
        window, records = list(session.current_chat_history), len(session.trace)
        task = asyncio.create_task(session.async_resize(True))
        entered = asyncio.create_task(model.entered.wait())
        await asyncio.wait({task, entered}, return_when=asyncio.FIRST_COMPLETED)  # no hang if the model is never called
        assert entered.done() and not task.done(), "the deep resize did not call its model"
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the cancelled resize returned")
        assert directs == [True]  # the run went without Pregel
        assert session.current_chat_history == window and var_child_runnable_config.get() is None
        assert len(session.trace) == records + 1 and "CancelledError" in (session.trace[-1].error or "")
        assert not session.trace[-1].committed
        assert len(await session.async_resize(True)) <= 4  # not left "already resizing"
        assert session.trace[-1].committed and session.state.memo

    asyncio.run(scenario())
