"""What one commit run carries: the graph's state and the context its steps read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import Runnable

from session_graph.memory.config import MemoryConfig
from session_graph.resize.state import SessionState

__all__ = ["CommitContext", "CommitState"]


@dataclass
class CommitState:
    """The commit graph's state.

    Attributes:
        session: the session's state; ``archive`` replaces it with the archived one.
        name: the archive this run works on (``archive_003``), once claimed.
        journal: that archive's journal: its range, the usage records it consumed, and each
            finished step's result (``overview``, ``candidates``, ``plan``, ``applied``...).
        hits: the prefilter's hits per candidate (recomputed on a resume).
        errors: what failed in this run (the archive stays pending; the next commit resumes).
        route: the last routing decision (for the trace and tests).
    """

    session: SessionState
    name: str | None = None
    journal: dict[str, Any] = field(default_factory=dict)
    hits: list[dict[str, dict[str, Any]]] | None = None
    errors: list[str] = field(default_factory=list)
    route: str | None = None


@dataclass(frozen=True)
class CommitContext:
    """What the steps read (never written by them).

    Attributes:
        memory: where memories live and whose they are.
        model: the chat model for the summary, extraction and decisions (None: no model steps).
        dry_run: plan only; nothing is archived or written.
        wait: False: archive only; the rest runs on the next ``commit()`` (or ``drain_commits``).
        now: the run's timestamp.
        checkpoint: called with the session state after each step that changed the journal
            (a ``SessionManager`` saves it there, so a crash resumes from the last step).
        top_k: similar memories shown per candidate.
        profile: the profile's bound (bullets, characters).
        keep_recent: the newest messages a commit leaves unarchived.
        max_input_chars: the longest transcript one summary or extraction prompt carries; a
            longer archive is summarised and mined chunk by chunk.
    """

    memory: MemoryConfig
    model: Runnable | None
    dry_run: bool = False
    wait: bool = True
    now: str = ""
    checkpoint: Callable[[SessionState], None] | None = None
    top_k: int = 5
    profile: tuple[int, int] = (30, 2000)
    keep_recent: int = 0
    max_input_chars: int = 24_000
