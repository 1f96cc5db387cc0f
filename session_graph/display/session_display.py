"""What a session shows of itself: drawings of its resize graph, plots of its trace, a Jupyter card.

Kept beside ``Session`` as a mixin so the facade stays one concept; matplotlib is imported
only when a plot is asked for (the optional ``viz`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from session_graph.display.cards import session_card
from session_graph.display.viz import GraphDrawing, draw

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from matplotlib.figure import Figure

    from session_graph.resize.trace import ResizeTrace

__all__ = ["SessionDisplay"]


class SessionDisplay:
    """The drawing, plotting and display methods of ``Session``."""

    graph: CompiledStateGraph
    trace: ResizeTrace

    def draw_mermaid(self) -> str:
        """Mermaid text of the resize graph, with the policy's labels on the edges."""
        return self.graph.get_graph().draw_mermaid()

    def draw(self, *, format: Literal["svg", "mermaid"] = "svg", highlight: Any = None) -> GraphDrawing:
        """The resize graph, drawn offline.

        Args:
            format: ``"svg"`` (displayed in every notebook frontend, no network) or
                ``"mermaid"`` (displayed as a Mermaid block; ``.mermaid`` has the text either way).
            highlight: a trace record (``session.trace[-1]``) or node names: that route is
                drawn over the graph the session's mode runs (a lite session's has no memo
                or summary nodes), each node with its visits and time. Without it the whole
                policy is drawn.
        """
        title = "resize graph"
        record = highlight if hasattr(highlight, "seq") else None
        if record is not None:
            title = f"resize #{record.seq} at turn {record.turn}: {record.type} ({record.reason}), {record.total_ms:.1f} ms in all"
        graph = self.graph if highlight is None else self._mode_graph()
        return draw(graph, format=format, highlight=highlight, title=title)

    def _mode_graph(self) -> CompiledStateGraph:
        raise NotImplementedError  # Session: the graph compiled for its mode

    def plot(self, *, ax: Any = None, unit: Literal["auto", "tokens", "chars"] = "auto") -> Figure:
        """Window size per turn against the limit, resizes marked by type, memo or summary size
        on a second axis. Needs matplotlib (``pip install "session_graph[viz]"``).

        Args:
            ax: a matplotlib Axes to draw into (default: a new Figure).
            unit: ``"tokens"``, ``"chars"``, or ``"auto"`` (tokens under a token budget).

        Returns:
            The Figure: shown inline in Jupyter, ``fig.savefig("window.png")`` (or ``.svg``) to save.
        """
        from session_graph.display.plots import plot_window

        return plot_window(self, ax=ax, unit=unit)  # type: ignore[arg-type]

    def plot_costs(self) -> Figure:
        """Model calls and tokens sent per resize, and their running totals. Needs matplotlib.

        Returns:
            The Figure (shown inline in Jupyter; ``savefig`` to save).
        """
        from session_graph.display.plots import plot_costs

        return plot_costs(self)  # type: ignore[arg-type]

    def _repr_html_(self) -> str:
        """The Jupyter card: id, mode, limits, window against history, memo, last resizes."""
        return session_card(self)  # type: ignore[arg-type]
