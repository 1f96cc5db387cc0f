"""``Session``'s display methods: ``draw``, ``draw_mermaid``, ``plot``, ``plot_costs`` and ``_repr_html_``.

Each is a function whose first parameter is the session, typed by a Protocol of what it reads
(``DrawnSession`` here, ``PlottedSession`` in ``plots``, ``CardSession`` in ``cards``; nothing
here imports the facade), and ``Session`` takes it as its method by name (``draw =
session_display.draw``): the docstring and signature live here, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from session_graph.display import plots
from session_graph.display.cards import CardSession, session_card
from session_graph.display.plots import PlottedSession
from session_graph.display.viz import GraphDrawing
from session_graph.display.viz import draw as draw_graph

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DrawnSession", "draw", "draw_mermaid", "draw_resize_graph", "plot", "plot_costs"]


class DrawnSession(Protocol):
    """What the drawings read of a ``Session``: its compiled resize graph, and the graph its mode runs
    (an internal the facade declares for ``draw``)."""

    @property
    def graph(self) -> Any: ...

    def _mode_graph(self) -> Any: ...


def draw_resize_graph(graph: Any, *, format: Literal["svg", "mermaid"] = "svg", highlight: Any = None) -> GraphDrawing:
    """A compiled resize graph drawn offline; a highlighted trace record titles the drawing with its run."""
    title = "resize graph"
    record = highlight if hasattr(highlight, "seq") else None
    if record is not None:
        title = f"resize #{record.seq} at turn {record.turn}: {record.type} ({record.reason}), {record.total_ms:.1f} ms in all"
    return draw_graph(graph, format=format, highlight=highlight, title=title)


def draw_mermaid(self: DrawnSession) -> str:
    """Mermaid text of the resize graph, with the policy's labels on the edges."""
    return str(self.graph.get_graph().draw_mermaid())


def draw(self: DrawnSession, *, format: Literal["svg", "mermaid"] = "svg", highlight: Any = None) -> GraphDrawing:
    """The resize graph, drawn offline.

    Args:
        format: ``"svg"`` (displayed in every notebook frontend, no network) or
            ``"mermaid"`` (displayed as a Mermaid block; ``.mermaid`` has the text either way).
        highlight: a trace record (``session.trace[-1]``) or node names: that route is
            drawn over the graph the session's mode runs (a lite session's has no memo
            or summary nodes), each node with its visits and time. Without it the whole
            policy is drawn.
    """
    return draw_resize_graph(self.graph if highlight is None else self._mode_graph(), format=format, highlight=highlight)


def plot(self: PlottedSession, *, ax: Any = None, unit: Literal["auto", "tokens", "chars"] = "auto") -> Figure:
    """Window size per turn against the limit, resizes marked by type, memo or summary size
    on a second axis. Needs matplotlib (``pip install "session_graph[viz]"``).

    Args:
        ax: a matplotlib Axes to draw into (default: a new Figure).
        unit: ``"tokens"``, ``"chars"``, or ``"auto"`` (tokens under a token budget).

    Returns:
        The Figure: shown inline in Jupyter, ``fig.savefig("window.png")`` (or ``.svg``) to save.
    """
    return plots.plot_window(self, ax=ax, unit=unit)


def plot_costs(self: PlottedSession) -> Figure:
    """Model calls and tokens sent per resize, and their running totals. Needs matplotlib.

    Returns:
        The Figure (shown inline in Jupyter; ``savefig`` to save).
    """
    return plots.plot_costs(self)


def _repr_html_(self: CardSession) -> str:
    """The Jupyter card: id, mode, limits, window against history, memo, last resizes."""
    return session_card(self)
