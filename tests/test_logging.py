"""Module loggers: stores, resizes, commits and memory can be tuned apart; all are children of session_graph."""

from __future__ import annotations

import logging
from pathlib import Path

from conftest import chat
import pytest

from session_graph import Session, SessionManager

PACKAGE = Path(__file__).resolve().parents[1] / "session_graph"
# the package root's own logger is configured in these two (a NullHandler; the CLI's -v)
CONFIGURES_THE_ROOT = {"session_graph", "session_graph.cli"}


def _modules() -> list[str]:
    return sorted(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
                  for path in PACKAGE.rglob("*.py"))


def _loggers(name: str) -> list[str]:
    """The names given to ``logging.getLogger`` at the top level of module ``name`` (a string or
    ``__name__``)."""
    import ast

    path = PACKAGE.parent.joinpath(*name.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger" and node.args:
            arg = node.args[0]
            found.append(name if isinstance(arg, ast.Name) and arg.id == "__name__"
                         else arg.value if isinstance(arg, ast.Constant) else ast.unparse(arg))
    return found


def test_every_module_logs_on_its_own_logger_under_the_package() -> None:
    import importlib

    modules = _modules()
    assert "session_graph.stores.search_index" in modules and "session_graph.retrieval.rerank" in modules
    logging_modules = 0
    for name in modules:
        for logger_name in _loggers(name):
            if logger_name.startswith("session_graph") and name not in CONFIGURES_THE_ROOT:
                assert logger_name == name, f"{name} logs on {logger_name!r}: use logging.getLogger(__name__)"
                logging_modules += 1
        if name.endswith("__main__"):
            continue  # importing it runs the CLI
        module = importlib.import_module(name)
        logger = getattr(module, "log", None) or getattr(module, "logger", None)
        if isinstance(logger, logging.Logger):
            assert logger.name == name and logger.name.startswith("session_graph."), f"{name}.log is {logger.name!r}"
    assert logging_modules >= 10  # the scan found the modules that log


def test_stores_can_be_quieted_while_resizes_still_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(tmp_path)
    session = chat(manager.get_or_create("k").configure(limit={"chars": 40}), 3)
    manager.save(session)
    manager.cache.clear()
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
        manager.cache.clear()
        manager.get("k")
    assert "session_graph.stores.session_load" in {record.name for record in caplog.records}  # and back
    assert isinstance(loaded, Session)
