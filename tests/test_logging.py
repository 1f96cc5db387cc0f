"""Module loggers: stores, resizes, commits and memory can be tuned apart; all are children of session_graph."""

from __future__ import annotations

import logging
from pathlib import Path

from conftest import chat
import pytest

from session_graph import Session, SessionManager

MODULES = ["session_graph.stores.manager", "session_graph.stores.jsonl", "session_graph.stores.interop",
           "session_graph.stores.nanobot", "session_graph.resize.trace", "session_graph.resize.trace_recording",
           "session_graph.resize.nodes.memo_update", "session_graph.integrations.binding", "session_graph.commit.run",
           "session_graph.memory.apply", "session_graph.cli"]


def test_every_module_logs_on_its_own_logger_under_the_package() -> None:
    import importlib

    for name in MODULES:
        module = importlib.import_module(name)
        logger = getattr(module, "log", None) or module.logger
        assert logger.name == name and logger.parent is not None
        assert logger.name.startswith("session_graph.")  # -v on "session_graph" shows it


def test_stores_can_be_quieted_while_resizes_still_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(tmp_path)
    session = chat(manager.get_or_create("k").configure(limit={"chars": 40}), 3)
    manager.save(session)
    manager._cache.clear()
    logging.getLogger("session_graph.stores").setLevel(logging.WARNING)
    try:
        with caplog.at_level(logging.INFO, logger="session_graph"):
            loaded = manager.get("k")
            assert loaded is not None
            loaded.resize()
    finally:
        logging.getLogger("session_graph.stores").setLevel(logging.NOTSET)
    names = {record.name for record in caplog.records}
    assert not any(name.startswith("session_graph.stores") for name in names)  # quieted
    assert any(name.startswith("session_graph.resize.trace") for name in names)  # the resize still logs
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="session_graph"):
        manager._cache.clear()
        manager.get("k")
    assert "session_graph.stores.manager" in {record.name for record in caplog.records}  # and back
    assert isinstance(loaded, Session)
