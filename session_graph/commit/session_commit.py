"""The commit methods of ``Session``: ``commit``, ``acommit`` and ``override_commit_node``.

Kept beside the commit graph (``commit/``), so ``session.py`` only mixes them in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Self

from langchain_core.runnables import Runnable

from session_graph._base.ids import utc_now
from session_graph.commit import CommitContext, build_commit_graph, commit_result, run_commit, run_commit_async
from session_graph.commit.graph import COMMIT_NODES
from session_graph.errors import ConfigurationError
from session_graph.memory.config import MemoryConfig
from session_graph.settings import SessionSettings
from session_graph.resize.state import SessionState
from session_graph.display.viz import GraphDrawing, draw

__all__ = ["SessionCommit"]

Checkpoint = Callable[[SessionState], None]


class SessionCommit:
    """OpenViking's ``commit()`` on a session (see ``commit/`` for the graph)."""

    _state: SessionState
    memory: MemoryConfig | None
    revision: int
    handlers: Any

    def override_commit_node(self, name: str, fn: Callable[..., Any]) -> Self:
        """Replace one commit step (``claim`` .. ``finalize``) with ``fn(state, runtime) -> update``.

        Raises:
            ConfigurationError: ``name`` is not a commit step, or ``fn`` is not callable.
        """
        if name not in COMMIT_NODES:
            raise ConfigurationError(f"no commit step {name!r}; the steps are {', '.join(COMMIT_NODES)}.")
        if not callable(fn):
            raise ConfigurationError(f"the override of commit step {name!r} must be callable, got {type(fn).__name__}.")
        overrides = dict(getattr(self, "_commit_overrides", {}))
        overrides[name] = fn
        self._commit_overrides = overrides
        return self

    def draw_commit(self, *, format: Literal["svg", "mermaid"] = "svg") -> GraphDrawing:
        """The commit graph, drawn offline (as ``draw()`` draws the resize graph)."""
        return draw(build_commit_graph(getattr(self, "_commit_overrides", None)), format=format, title="commit graph")

    def commit(self, *, dry_run: bool = False, wait: bool = True, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
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
        ctx = self._commit_context(dry_run, wait, checkpoint)
        final = run_commit(build_commit_graph(getattr(self, "_commit_overrides", None), sync=True), self._state, ctx)
        if not dry_run:
            self._adopt_commit(final.session)
        return commit_result(final, ctx)

    async def acommit(self, *, dry_run: bool = False, wait: bool = True, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
        """Async twin of :meth:`commit` (model calls through ``ainvoke``)."""
        ctx = self._commit_context(dry_run, wait, checkpoint)
        final = await run_commit_async(build_commit_graph(getattr(self, "_commit_overrides", None), sync=False), self._state, ctx)
        if not dry_run:
            self._adopt_commit(final.session)
        return commit_result(final, ctx)

    def _commit_context(self, dry_run: bool, wait: bool, checkpoint: Checkpoint | None) -> CommitContext:
        if self.memory is None:
            raise ConfigurationError(
                "commit() needs long-term memory: Session(..., memory=MemoryConfig(user=..., agent=...)) "
                "or SessionManager(..., memory=MemoryConfig(...))."
            )
        model: Runnable | None = self.memory.model or self.handlers.model
        settings: SessionSettings = self._state.settings

        def adopt_then(state: SessionState) -> None:
            self._adopt_commit(state)
            if checkpoint is not None:
                checkpoint(state)

        return CommitContext(memory=self.memory, model=model, dry_run=dry_run, wait=wait, now=utc_now(),
                             checkpoint=None if dry_run else adopt_then, top_k=_setting(settings, "top_k", 5),
                             profile=(_setting(settings, "profile.max_items", 30), _setting(settings, "profile.max_chars", 2000)),
                             keep_recent=_setting(settings, "keep_recent", 0),
                             max_input_chars=_setting(settings, "max_input_chars", 24_000))

    def _adopt_commit(self, state: SessionState) -> None:
        """Take a commit's ledger (cursor, usage, archives); messages appended meanwhile stay."""
        live = self._state
        live.archived_through, live.usage, live.archives = state.archived_through, state.usage, state.archives
        self.revision += 1
        if live.settings.get("session.memory.trim_window") and not (state.archives or {}).get("pending"):
            self._trim_archived()

    def _trim_archived(self) -> None:
        raise NotImplementedError  # Session: archived messages leave the window


def _setting(settings: SessionSettings, name: str, default: int) -> int:
    try:
        value = settings.get(f"session.memory.{name}")
    except Exception:  # an unknown setting in an older schema: the default
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else default
