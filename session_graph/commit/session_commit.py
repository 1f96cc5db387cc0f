"""What ``Session.commit`` needs from the commit graph: its context, the overrides, adopting the result.

``Session`` delegates here: ``commit_context`` builds a run's ``CommitContext`` from the session's
memory, model and settings; ``adopt_commit`` takes a finished run's ledger into the live state;
``with_commit_override`` checks one replaced step; ``draw_commit_graph`` draws the graph.
Functions of explicit arguments: nothing here imports the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from langchain_core.runnables import Runnable

from session_graph._base.ids import utc_now
from session_graph.commit import CommitContext, build_commit_graph
from session_graph.commit.graph import COMMIT_NODES
from session_graph.display.viz import GraphDrawing, draw
from session_graph.errors import ConfigurationError
from session_graph.memory.config import MemoryConfig
from session_graph.resize.state import SessionState
from session_graph.settings import SessionSettings

__all__ = ["Checkpoint", "adopt_commit", "commit_context", "draw_commit_graph", "with_commit_override"]

Checkpoint = Callable[[SessionState], None]


def with_commit_override(overrides: Mapping[str, Any] | None, name: str, fn: Callable[..., Any]) -> dict[str, Any]:
    """``overrides`` with commit step ``name`` replaced by ``fn(state, runtime) -> update``.

    Raises:
        ConfigurationError: ``name`` is not a commit step, or ``fn`` is not callable.
    """
    if name not in COMMIT_NODES:
        raise ConfigurationError(f"no commit step {name!r}; the steps are {', '.join(COMMIT_NODES)}.")
    if not callable(fn):
        raise ConfigurationError(f"the override of commit step {name!r} must be callable, got {type(fn).__name__}.")
    return {**(overrides or {}), name: fn}


def draw_commit_graph(overrides: Mapping[str, Any] | None, *, format: Literal["svg", "mermaid"] = "svg") -> GraphDrawing:
    """The commit graph with these overrides, drawn offline."""
    return draw(build_commit_graph(overrides), format=format, title="commit graph")


def commit_context(memory: MemoryConfig | None, model: Runnable | None, settings: SessionSettings, *, dry_run: bool,
                   wait: bool, adopt: Checkpoint) -> CommitContext:
    """One commit run's context; ``adopt`` is called with the state after each step that changed it (not in a dry run).

    Raises:
        ConfigurationError: no ``memory`` (the session was made without ``MemoryConfig``).
    """
    if memory is None:
        raise ConfigurationError(
            "commit() needs long-term memory: Session(..., memory=MemoryConfig(user=..., agent=...)) "
            "or SessionManager(..., memory=MemoryConfig(...))."
        )
    memory = memory.for_run()  # a commit inside a LangGraph run: that run's user and agent
    return CommitContext(memory=memory, model=memory.model or model, dry_run=dry_run, wait=wait, now=utc_now(),
                         checkpoint=None if dry_run else adopt, top_k=_setting(settings, "top_k", 5),
                         profile=(_setting(settings, "profile.max_items", 30), _setting(settings, "profile.max_chars", 2000)),
                         keep_recent=_setting(settings, "keep_recent", 0),
                         max_input_chars=_setting(settings, "max_input_chars", 24_000))


def adopt_commit(live: SessionState, state: SessionState) -> bool:
    """Take a commit's ledger (cursor, usage, archives) into the live state; messages appended meanwhile stay.

    Returns whether archived messages should now leave the window (``session.memory.trim_window``).
    """
    live.archived_through, live.usage, live.archives = state.archived_through, state.usage, state.archives
    return bool(live.settings.get("session.memory.trim_window")) and not (state.archives or {}).get("pending")


def _setting(settings: SessionSettings, name: str, default: int) -> int:
    try:
        value = settings.get(f"session.memory.{name}")
    except Exception:  # an unknown setting in an older schema: the default
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else default
