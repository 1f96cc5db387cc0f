"""What a session shows of itself: the drawing of its resize graph, titled by the run it highlights.

``Session.draw``, ``plot``, ``plot_costs`` and ``_repr_html_`` delegate here, to ``plots`` and to
``cards``, handing over what is drawn; nothing here imports the facade.
"""

from __future__ import annotations

from typing import Any, Literal

from session_graph.display.viz import GraphDrawing, draw

__all__ = ["draw_resize_graph"]


def draw_resize_graph(graph: Any, *, format: Literal["svg", "mermaid"] = "svg", highlight: Any = None) -> GraphDrawing:
    """A compiled resize graph drawn offline; a highlighted trace record titles the drawing with its run."""
    title = "resize graph"
    record = highlight if hasattr(highlight, "seq") else None
    if record is not None:
        title = f"resize #{record.seq} at turn {record.turn}: {record.type} ({record.reason}), {record.total_ms:.1f} ms in all"
    return draw(graph, format=format, highlight=highlight, title=title)
