"""What ``direct.select`` must send to Pregel because of the session's model: a "model" that is
a chat Runnable holding the user's code (a ``RunnableLambda``, a sequence), and callbacks a model
carries other than in ``callbacks`` or ``with_config(callbacks=...)`` (``with_listeners``, a
model inside a sequence). A caller sees the same fold whichever executor would have run it."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import fake_model, memo_reply
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langgraph.config import get_store, get_stream_writer
import pytest
from resize_util import pruning

from session_graph import Session
from session_graph.resize.direct import FORCE_PREGEL_ENV


@pytest.fixture(autouse=True)
def _default_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORCE_PREGEL_ENV, raising=False)  # the suite may run with Pregel forced


def test_a_model_runnable_that_writes_to_the_stream_folds_as_under_pregel() -> None:
    """A chat Runnable of the user's that reports progress with ``get_stream_writer()`` (a node's
    facility under Pregel) folds; the direct run gave it no runtime: MemoUpdateError '__pregel_runtime'."""
    def folding(messages: list[BaseMessage]) -> AIMessage:
        get_stream_writer()({"memo": "folding"})
        return AIMessage(content=memo_reply({"facts": ["folded"]}))

    session = pruning(Session(model=RunnableLambda(folding)).use_memo(messages=6))
    session.resize()
    assert session.memo["facts"] == ["folded"] and session.trace[-1].error is None
    twin = pruning(Session(model=RunnableLambda(folding)).use_memo(messages=6))
    asyncio.run(twin.async_resize())
    assert twin.memo["facts"] == ["folded"] and twin.trace[-1].error is None


class _Metadata(BaseCallbackHandler):
    def __init__(self) -> None:
        self.nodes: list[Any] = []

    def on_chat_model_start(self, *args: Any, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.nodes.append((metadata or {}).get("langgraph_node"))

    def on_llm_start(self, *args: Any, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.nodes.append((metadata or {}).get("langgraph_node"))


def test_a_models_listeners_see_the_fold_as_a_node_run() -> None:
    """``with_listeners`` adds its callbacks by a config factory: the model is observed."""
    seen: list[Any] = []
    model = fake_model(memo_reply({"facts": ["x"]})).with_listeners(
        on_start=lambda run: seen.append(run.extra.get("metadata", {}).get("langgraph_node")))
    pruning(Session(model=model).use_memo(messages=6)).resize()
    assert seen == ["memo_update"]


def test_callbacks_on_a_model_inside_a_sequence_see_the_fold_as_a_node_run() -> None:
    handler = _Metadata()
    model = RunnableLambda(lambda messages: messages) | fake_model(memo_reply({"facts": ["x"]})).with_config(callbacks=[handler])
    pruning(Session(model=model).use_memo(messages=6)).resize()
    assert handler.nodes == ["memo_update"]


def test_a_plain_chat_model_in_bindings_retries_and_fallbacks_still_goes_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fix sends only what needs it to Pregel: a chat model bound, retried or with fallbacks is plain."""
    from session_graph.resize import direct, session_run

    picks: list[bool] = []

    def select(graph: Any, handlers: Any, *, sync: bool) -> Any:
        plan = direct.select(graph, handlers, sync=sync)
        picks.append(plan is not None)
        return plan

    monkeypatch.setattr(session_run, "select", select)
    reply = memo_reply({"facts": ["x"]})
    for model in (fake_model(reply), fake_model(reply).bind(stop=["\n\n\n"]).with_retry(stop_after_attempt=2),
                  fake_model(reply).with_fallbacks([fake_model(reply)]), fake_model(reply).with_config(tags=["memo"])):
        pruning(Session(model=model).use_memo(messages=6)).resize()
    assert picks == [True, True, True, True]


def test_inside_an_agent_a_model_runnable_that_writes_to_the_stream_folds() -> None:
    """Inside an agent's custom stream (no callbacks) the direct run handed the user's Runnable the
    agent's runtime without its checkpoint keys: MemoUpdateError 'checkpoint_ns', every turn."""
    from agents_util import lookup, model
    from langchain.agents import create_agent

    from session_graph.integrations import SessionMiddleware

    def folding(messages: list[BaseMessage]) -> AIMessage:
        get_stream_writer()({"memo": "folding"})
        return AIMessage(content=memo_reply({"facts": ["folded"]}))

    session = Session(model=RunnableLambda(folding)).use_memo(chars=900)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], system_prompt="You are helpful.")
    for turn in range(6):
        list(agent.stream({"messages": [HumanMessage(content=f"question {turn}")]}, stream_mode="custom"))
    assert session.trace and all(record.error is None for record in session.trace)
    assert session.memo["facts"] == ["folded"]


def test_callbacks_a_model_takes_from_the_runs_configurable_see_the_fold_as_a_node_run() -> None:
    """``configurable_fields(callbacks=...)``: the callbacks come from the enclosing run's configurable."""
    from langchain_core.runnables import ConfigurableField

    handler = _Metadata()
    model = fake_model(memo_reply({"facts": ["x"]})).configurable_fields(callbacks=ConfigurableField(id="model_callbacks"))
    session = pruning(Session(model=model).use_memo(messages=6))
    RunnableLambda(lambda _: session.resize()).invoke(None, {"configurable": {"model_callbacks": [handler]}})
    assert handler.nodes == ["memo_update"]


class _ContextReadingModel(GenericFakeChatModel):
    """A chat model of the user's own class (a provider wrapper) that reports progress on the
    run's stream and reads the run's store, as LangGraph lets code inside a node do."""

    stores: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        get_stream_writer()({"memo": "folding"})
        self.stores = [*self.stores, get_store()]
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("use_async", [False, True])
def test_a_chat_model_reading_the_runs_writer_and_store_folds_as_under_pregel(use_async: bool) -> None:
    """Direct runs give a chat model's code what Pregel's run gives it: a stream writer (its
    writes go nowhere, as the resize's own stream has no reader) and the run's store (none here)."""
    model = _ContextReadingModel(messages=iter([AIMessage(content=memo_reply({"facts": ["folded"]}))]))
    session = pruning(Session(model=model).use_memo(messages=6))
    if use_async:
        asyncio.run(session.async_resize())
    else:
        session.resize()
    assert session.trace[-1].error is None and session.memo["facts"] == ["folded"]
    assert model.stores == [None]


def test_inside_an_agent_with_a_store_a_chat_model_sees_that_store_as_under_pregel() -> None:
    from agents_util import lookup, model
    from langchain.agents import create_agent
    from langgraph.store.memory import InMemoryStore

    from session_graph.integrations import SessionMiddleware

    store = InMemoryStore()
    folding = _ContextReadingModel(messages=iter([AIMessage(content=memo_reply({"facts": [f"fold {n}"]})) for n in range(20)]))
    session = Session(model=folding).use_memo(chars=900)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], system_prompt="You are helpful.",
                         store=store)
    for turn in range(6):
        list(agent.stream({"messages": [HumanMessage(content=f"question {turn}")]}, stream_mode="custom"))
    assert session.trace and all(record.error is None for record in session.trace)
    assert folding.stores and all(seen is store for seen in folding.stores)
