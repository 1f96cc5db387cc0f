"""Models as users name them: ``init_chat_model`` strings wherever a model is taken."""

from __future__ import annotations

import sys
from typing import Any

from conftest import chat, fake_model, memo_reply
from langchain_core.language_models import BaseChatModel
import pytest

from session_graph import ConfigurationError, ModelMemoUpdater, ModelSummarizer, Session
from session_graph.llm.names import chat_model
from session_graph.memory import MemoryConfig


@pytest.fixture
def named(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """init_chat_model replaced by one that hands out fake models and records the names asked for."""
    import langchain.chat_models

    made: dict[str, Any] = {"names": [], "replies": [memo_reply({"user": "likes tea"})]}

    def init_chat_model(name: str, **kwargs: Any) -> Any:
        made["names"].append(name)
        if not name.startswith("fake:"):
            raise ValueError(f"Unsupported model provider for {name!r}")
        made["model"] = fake_model(*made["replies"])
        return made["model"]

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    return made


def test_a_real_provider_string_constructs_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # constructing a ChatOpenAI calls nothing
    model = chat_model("openai:gpt-4o-mini")
    assert isinstance(model, BaseChatModel) and type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-4o-mini"  # type: ignore[attr-defined]
    session = Session(model="openai:gpt-4o-mini")
    assert type(session.model).__name__ == "ChatOpenAI"


def test_a_named_model_folds_the_memo(named: dict[str, Any]) -> None:
    session = chat(Session(model="fake:memo").use_memo(messages=2), 2)
    session.resize("lite")
    assert named["names"] == ["fake:memo"] and session.model is named["model"]
    assert session.memo_for_model == {"user": "likes tea"}
    assert len(named["model"].prompts) == 1  # the named model was the one asked


def test_every_place_taking_a_model_takes_a_name(named: dict[str, Any]) -> None:
    assert ModelMemoUpdater("fake:a").model is named["model"]
    assert ModelSummarizer("fake:b").model is named["model"]
    assert MemoryConfig(model="fake:c").model is named["model"]
    assert named["names"] == ["fake:a", "fake:b", "fake:c"]


def test_bad_names_are_refused_with_the_reason(named: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=r"model='nosuch:x': init_chat_model could not make this model: Unsupported"):
        Session(model="nosuch:x")
    with pytest.raises(ConfigurationError, match="MemoryConfig model='nosuch:y'"):
        MemoryConfig(model="nosuch:y")
    with pytest.raises(ConfigurationError, match="empty string"):
        Session(model="  ")
    with pytest.raises(ConfigurationError, match=r"or a model name init_chat_model accepts.*got int"):
        Session(model=42)  # type: ignore[arg-type]


def test_without_langchain_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)  # import fails as if not installed
    with pytest.raises(ConfigurationError, match=r'pip install "session_graph\[agents\]"'):
        Session(model="openai:gpt-4o-mini")
    model = fake_model("x")
    assert chat_model(model) is model  # model objects need no langchain
