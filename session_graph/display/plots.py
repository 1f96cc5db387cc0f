"""Plots of a session's resize trace (matplotlib, the optional ``viz`` extra).

``plot_window``: the window's size at the end of every turn against the limit, each resize a
drop marked by its type, the memo or summary size on a second axis. ``plot_costs``: model
calls and tokens sent per resize, with running totals. Both return a matplotlib ``Figure``
that Jupyter shows once, inline (PNG; pyplot does not keep it), and ``fig.savefig(path)``
writes PNG or SVG.

The window between resizes is rebuilt from the full history: after a resize it is what the
record says it kept, then each appended message adds its size (as the running totals do);
each resize resets it to its recorded before and after. Before the oldest record kept it is
drawn only when the trace goes back to the session's first resize.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from langchain_core.messages import AIMessage

from session_graph.accounting.sizing import message_chars
from session_graph.errors import ConfigurationError, MissingDependencyError
from session_graph.messages import role_of

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PlottedSession", "WindowSeries", "new_figure", "plot_costs", "plot_window", "window_series"]

TraceRecord = Any
"""A ``resize.trace.TraceRecord``: read here, never imported (display sits below the resize machine)."""


class PlottedSession(Protocol):
    """What the plots read of a ``Session``: its id, settings, full history, token sizes and trace."""

    @property
    def id(self) -> str: ...

    @property
    def settings(self) -> Any: ...

    @property
    def full_chat_history(self) -> Sequence[Any]: ...

    @property
    def trace(self) -> Iterable[TraceRecord]: ...

    def tokens_of(self, message: Any) -> int: ...
__all__ = ["FIGURE_FORMATS", "WindowSeries", "check_figure_path", "new_figure", "plot_costs", "plot_window", "window_series"]

FIGURE_FORMATS = (".png", ".svg", ".pdf")

_COLORS = {"lite": "#1c7ed6", "deep": "#e8590c"}
_OTHER = "#5f3dc4"


def check_figure_path(path: str | None, option: str = "--plot") -> None:
    """Before any work is done: ``path`` names a writable file in a format ``savefig`` writes,
    and matplotlib is installed (None: nothing to check).

    Raises:
        ConfigurationError: a bad suffix, a missing folder, or no permission to write (naming ``option``).
        MissingDependencyError: matplotlib is not installed (naming the extra).
    """
    if not path:
        return
    target = Path(path)
    if target.suffix.lower() not in FIGURE_FORMATS:
        raise ConfigurationError(f"{option} {path}: name a .png, .svg or .pdf file.")
    if not target.parent.is_dir():
        raise ConfigurationError(f"{option} {path}: the folder {target.parent} does not exist.")
    if target.is_dir() or not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConfigurationError(f"{option} {path}: cannot write there.")
    if importlib.util.find_spec("matplotlib") is None:
        raise MissingDependencyError(f'{option} needs matplotlib: pip install "session_graph[viz]" (or pip install matplotlib).')


def new_figure(**kwargs: Any) -> Figure:
    """A Figure that Jupyter shows once, as the cell's result (pyplot does not show it again).

    Raises:
        MissingDependencyError: matplotlib is not installed (the message says what to install).
    """
    try:
        from matplotlib import pyplot
    except ImportError as error:
        raise MissingDependencyError(
            'plots need matplotlib: pip install "session_graph[viz]" (or pip install matplotlib).'
        ) from error
    fig = pyplot.figure(layout="constrained", **kwargs)
    pyplot.close(fig)  # made through pyplot so Jupyter's inline backend knows how to show it; closed so it is shown once
    return fig


@dataclass(frozen=True)
class WindowSeries:
    """The window's size over the conversation, rebuilt from the history and the trace.

    Attributes:
        unit: ``"tokens"`` or ``"chars"``.
        turns: x of each point (the turn count; a resize gives two points at its turn).
        sizes: the window's size at each point.
        limit: the limit in that unit (0: none).
        resizes: the records drawn, oldest first.
    """

    unit: str
    turns: list[int]
    sizes: list[int]
    limit: int
    resizes: list[TraceRecord]


def window_series(session: PlottedSession, unit: Literal["auto", "tokens", "chars"] = "auto") -> WindowSeries:
    """The data ``plot_window`` draws (see the module docstring); O(history)."""
    if unit not in ("auto", "tokens", "chars"):
        raise ConfigurationError(f"unit must be 'auto', 'tokens' or 'chars', got {unit!r}.")
    limits = session.settings.resolved()
    tokens = unit == "tokens" or (unit == "auto" and bool(limits.tokens))
    if tokens and not limits.tokens:
        raise ConfigurationError("unit='tokens' needs a token budget (session.limit.tokens); plot chars instead.")
    size = session.tokens_of if tokens else message_chars
    records = sorted(session.trace, key=lambda r: (r.history, r.seq))
    complete = bool(records) and records[0].seq == 1
    full = session.full_chat_history
    start = 0 if complete or not records else records[0].history
    value = 0 if start == 0 else None
    turn = sum(1 for m in full[:start] if _ends_turn(m))
    turns: list[int] = []
    sizes: list[int] = []
    pending = iter(records)
    record = next(pending, None)
    for index in range(start, len(full) + 1):
        while record is not None and record.history == index:
            before = record.tokens_before if tokens else record.chars_before
            after = record.tokens_after if tokens else record.chars_after
            turns += [record.turn, record.turn]
            sizes += [before, after]
            value = after
            record = next(pending, None)
        if index == len(full):
            break
        message = full[index]
        if value is not None:
            value += size(message)
        if _ends_turn(message):
            turn += 1
            if value is not None:
                turns.append(turn)
                sizes.append(value)
    return WindowSeries("tokens" if tokens else "chars", turns, sizes, limits.tokens if tokens else limits.chars, records)


def _ends_turn(message: Any) -> bool:
    return isinstance(message, AIMessage) and role_of(message) == "assistant" and not message.tool_calls


def plot_window(session: PlottedSession, *, ax: Any = None, unit: Literal["auto", "tokens", "chars"] = "auto") -> Figure:
    """The window per turn against the limit, resizes marked, memo or summary size on a second axis."""
    series = window_series(session, unit)
    fig = ax.figure if ax is not None else new_figure(figsize=(9, 3.9))
    ax = ax if ax is not None else fig.add_subplot()
    ax.plot(series.turns, series.sizes, color="#495057", linewidth=1.2, label=f"window ({series.unit})")
    if series.limit:
        ax.axhline(series.limit, color="#c92a2a", linestyle="--", linewidth=1, label=f"limit {series.limit:,}")
    by_type: dict[str, list[TraceRecord]] = {}
    for record in series.resizes:
        by_type.setdefault(record.type or "?" if record.committed else "failed", []).append(record)
    for kind, records in sorted(by_type.items()):
        before = [r.tokens_before if series.unit == "tokens" else r.chars_before for r in records]
        ax.scatter([r.turn for r in records], before, s=22, zorder=3, marker="x" if kind == "failed" else "v",
                   color="#000000" if kind == "failed" else _COLORS.get(kind, _OTHER), label=f"{kind} resize ({len(records)})")
    ax.set_xlabel("turn")
    ax.set_ylabel(f"window {series.unit}")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.25)
    kinds = {r.context for r in series.resizes if r.context}
    handles, labels = ax.get_legend_handles_labels()
    if kinds:
        context = ax.twinx()
        points = [(r.turn, r.context_chars_after) for r in series.resizes if r.committed]
        context.step([t for t, _ in points], [c for _, c in points], where="post", color="#2b8a3e", linewidth=1.2, alpha=0.8)
        context.set_ylabel(f"{'/'.join(sorted(kinds))} chars", color="#2b8a3e")
        context.set_ylim(bottom=0)
        context.tick_params(axis="y", colors="#2b8a3e")
        handles.append(context.get_lines()[0])
        labels.append(f"{'/'.join(sorted(kinds))} size (chars)")
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(len(labels), 5), fontsize=8,
              frameon=False)  # below the axes: never over the data
    ax.set_title(f"session {session.id[:16]}: window per turn, {len(series.resizes)} resizes", fontsize=10)
    return fig


def plot_costs(session: PlottedSession) -> Figure:
    """Model calls and tokens sent per resize (bars), and their running totals (lines)."""
    records = list(session.trace)
    fig = new_figure(figsize=(9, 4.2))
    top, bottom = fig.subplots(2, 1, sharex=True)
    turns = [r.turn for r in records]
    unit = "tokens" if session.settings.resolved().counter is not None else "chars"
    for ax, values, what, color in (
        (top, [r.model_calls for r in records], "model calls", "#5f3dc4"),
        (bottom, [r.sent_tokens for r in records], f"{unit} sent", "#0b7285"),
    ):
        ax.bar(turns, values, width=0.8, color=color, alpha=0.75, label=f"{what} per resize")
        running, total = [], 0
        for value in values:
            total += value
            running.append(total)
        twin = ax.twinx()
        twin.plot(turns, running, color="#212529", linewidth=1.2, label="running total")
        twin.set_ylim(bottom=0)
        twin.set_ylabel("running total", fontsize=8)
        ax.set_ylabel(what)
        ax.grid(alpha=0.25)
        handles, labels = ax.get_legend_handles_labels()
        more_handles, more_labels = twin.get_legend_handles_labels()
        ax.legend(handles + more_handles, labels + more_labels, loc="upper left", fontsize=8, framealpha=0.85)
    bottom.set_xlabel("turn")
    calls = sum(r.model_calls for r in records)
    top.set_title(f"session {session.id[:16]}: {calls} model calls in {len(records)} resizes", fontsize=10)
    return fig
