"""``Session``'s long-term memory methods: ``commit``/``acommit``, ``override_commit_node``, ``draw_commit``.

Each is a function whose first parameter is the session, typed by ``CommittingSession`` (what
they use of it, declared; nothing here imports the facade), and ``Session`` takes it as its
method by name (``commit = session_commit.commit``): the docstring and signature live here, once.
Under them, functions of explicit arguments: ``commit_context`` builds a run's ``CommitContext``
from the session's memory, model and settings; ``adopt_commit`` takes a finished run's ledger into
the live state; ``with_commit_override`` checks one replaced step; ``draw_commit_graph`` draws the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

from langchain_core.runnables import Runnable

from session_graph._base.ids import utc_now
from session_graph.commit import CommitContext, build_commit_graph, commit_result, run_commit, run_commit_async
from session_graph.commit.graph import COMMIT_NODES
from session_graph.display.viz import GraphDrawing, draw
from session_graph.errors import ConfigurationError
from session_graph.memory.config import MemoryConfig
from session_graph.memory.migrate import warn_unmigrated
from session_graph.resize.state import SessionState
from session_graph.settings import SessionSettings

__all__ = [
    "Checkpoint",
    "CommittingSession",
    "acommit",
    "adopt_commit",
    "commit",
    "commit_context",
    "draw_commit",
    "draw_commit_graph",
    "override_commit_node",
    "with_commit_override",
]

Checkpoint = Callable[[SessionState], None]


class CommittingSession(Protocol):
    """What the commit methods use of a ``Session``: its memory, model, state and revision, and two
    internals the facade declares for them (its commit overrides, and dropping archived messages
    from the window)."""

    memory: MemoryConfig | None
    revision: int
    _commit_overrides: dict[str, Any]

    @property
    def state(self) -> SessionState: ...

    @property
    def model(self) -> Runnable[Any, Any] | None: ...

    def _trim_archived(self) -> None: ...


SessionT = TypeVar("SessionT", bound=CommittingSession)


def override_commit_node(self: SessionT, name: str, fn: Callable[..., Any]) -> SessionT:
    """Replace one commit step (``claim`` .. ``finalize``) with ``fn(state, runtime) -> update``.

    Raises:
        ConfigurationError: ``name`` is not a commit step, or ``fn`` is not callable.
    """
    self._commit_overrides = with_commit_override(self._commit_overrides, name, fn)
    return self


def draw_commit(self: CommittingSession, *, format: Literal["svg", "mermaid"] = "svg") -> GraphDrawing:
    """The commit graph, drawn offline (as ``draw()`` draws the resize graph)."""
    return draw_commit_graph(self._commit_overrides, format=format)


def commit(self: CommittingSession, *, dry_run: bool = False, wait: bool = True,
           checkpoint: Checkpoint | None = None) -> dict[str, Any]:
    """Archive the messages no commit archived yet, summarise them and fold long-term
    memories from them into ``memory``'s store, without duplicates.

    Args:
        dry_run: return the plan (``result["plan"]``) and write nothing.
        wait: False: archive only (status ``archived``); the next ``commit()`` does the rest.
        checkpoint: called with the session state after each step that changed it (a
            ``SessionManager`` saves it there; see ``SessionManager.commit``).

    Returns:
        ``{"status": "committed" | "skipped" | "partial" | "archived" | "dry_run", "archived",
        "archive", "memories_extracted", "active_count_updated", "memories": {"created",
        "updated", "merged", "skipped"}, "errors", "plan", "abstract"}``. ``partial``: a model
        step failed; the archive stays pending and the next ``commit()`` resumes it.

    Raises:
        ConfigurationError: the session has no ``memory=MemoryConfig(...)``.
    """
    ctx = _context(self, dry_run, wait, checkpoint)
    final = run_commit(build_commit_graph(self._commit_overrides, sync=True), self.state, ctx)
    return _finish(self, final, ctx)


async def acommit(self: CommittingSession, *, dry_run: bool = False, wait: bool = True,
                  checkpoint: Checkpoint | None = None) -> dict[str, Any]:
    """Async twin of :meth:`commit` (model calls through ``ainvoke``)."""
    ctx = _context(self, dry_run, wait, checkpoint)
    final = await run_commit_async(build_commit_graph(self._commit_overrides, sync=False), self.state, ctx)
    return _finish(self, final, ctx)


def _context(session: CommittingSession, dry_run: bool, wait: bool, checkpoint: Checkpoint | None) -> CommitContext:
    def adopt_then(state: SessionState) -> None:
        _adopt(session, state)
        if checkpoint is not None:
            checkpoint(state)

    return commit_context(session.memory, session.model, session.state.settings, dry_run=dry_run, wait=wait, adopt=adopt_then)


def _finish(session: CommittingSession, final: Any, ctx: CommitContext) -> dict[str, Any]:
    if not ctx.dry_run:
        _adopt(session, final.session)
    return commit_result(final, ctx)


def _adopt(session: CommittingSession, state: SessionState) -> None:
    """Take a commit's ledger (cursor, usage, archives); messages appended meanwhile stay."""
    trim = adopt_commit(session.state, state)
    session.revision += 1
    if trim:
        session._trim_archived()


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
    run = memory.for_run()  # a commit inside a LangGraph run: that run's user and agent
    # and tenant only where the session's config has none: a tenant's session (a manager's) is mined into that
    # tenant's memory, never into another tenant a run names (run_tenants lets runs choose, not move sessions)
    memory = run if memory.tenant is None else run.for_tenant(memory.tenant)
    warn_unmigrated(memory)  # a tenant's user whose memories are still at their place before tenancy: said once
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
