"""Shared fixtures: every behaviour is checked through the sync and the async API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import json
import os
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from pool_leaks import pytest_runtest_teardown  # noqa: F401 - a hook: a psycopg pool left open fails its test
import pytest
from stores_util import BACKENDS, make_store

from session_graph import Session
from session_graph.stores import SessionStore

# Opt-in suites: off in a plain local run (the README's test command stays minutes, offline),
# on in CI (CI=true) or when their variable is set.
OPT_IN = {
    "real_nanobot": ("SESSION_GRAPH_REAL_NANOBOT", "pip-installs three nanobot releases into throwaway venvs (network, minutes)"),
    "slow": ("SESSION_GRAPH_SLOW_TESTS", "several processes race on one store (seconds each)"),
}


def opted_in(marker: str) -> bool:
    """Whether the opt-in suite ``marker`` runs: its variable is set, or CI is."""
    variable = OPT_IN[marker][0]
    if marker == "real_nanobot" and os.environ.get("SESSION_GRAPH_SKIP_REAL_NANOBOT"):
        return False  # the older opt-out still wins
    return bool(os.environ.get(variable)) or os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    for marker, (variable, what) in OPT_IN.items():
        config.addinivalue_line("markers", f"{marker}: opt-in ({what}); runs with {variable}=1 or in CI")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, (variable, what) in OPT_IN.items():
        if opted_in(marker):
            continue
        skip = pytest.mark.skip(reason=f"opt-in: {what}; set {variable}=1 to run (CI runs it)")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


class Api:
    """Calls a session the sync way or the async way, with one spelling in tests."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def judge(self, session: Session, force: Any = False) -> Any:
        if self.mode == "sync":
            return session.judge_resize(force)
        return asyncio.run(session.async_judge_resize(force))

    def resize(self, session: Session, force: Any = False) -> Any:
        if self.mode == "sync":
            return session.resize(force)
        return asyncio.run(session.async_resize(force))


@pytest.fixture(params=["sync", "async"])
def api(request: pytest.FixtureRequest) -> Api:
    return Api(request.param)


def memo_reply(memo: dict[str, Any]) -> str:
    return json.dumps({"memo": memo})


def fake_model(*replies: str) -> FakeListChatModel:
    """A chat model answering with ``replies`` in order (and recording what it was sent)."""
    return RecordingModel(responses=list(replies))


class RecordingModel(FakeListChatModel):
    """FakeListChatModel that keeps every prompt it received."""

    prompts: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        self.prompts = [*self.prompts, messages]
        return super()._call(messages, stop, run_manager, **kwargs)


class BrokenModel(GenericFakeChatModel):
    """A chat model whose every call raises, like a provider outage."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("provider unavailable (simulated)")


@pytest.fixture
def broken_model() -> BrokenModel:
    return BrokenModel(messages=iter([AIMessage(content="never")]))


def chat(session: Session, turns: int, size: int = 10, start: int = 0) -> Session:
    """Append ``turns`` user/assistant pairs with contents of ``size`` characters."""
    for i in range(start, start + turns):
        session.append_message({"role": "user", "content": f"u{i}".ljust(size, ".")})
        session.append_message({"role": "assistant", "content": f"a{i}".ljust(size, ".")})
    return session


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    """Each session-store backend (the conformance suites run on all of them)."""
    return request.param


@pytest.fixture
def store(kind: str, tmp_path: Any) -> Iterator[SessionStore]:
    """A fresh store of ``kind``, closed after the test (test modules may define their own ``store``)."""
    made = make_store(kind, tmp_path)
    yield made
    made.close()
