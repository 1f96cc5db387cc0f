"""Offline drawings of the resize graph.

LangGraph's ``draw_mermaid_png`` posts the diagram to a web service by default; here
nothing leaves the machine. ``GraphDrawing`` shows itself in Jupyter as an SVG laid out
by this module (layers from START, one row per layer, labelled edges) and carries the
mermaid text for documentation and snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from langgraph.graph.state import CompiledStateGraph

__all__ = ["GraphDrawing", "draw"]

_BOX_H, _ROW_H, _CHAR_W, _PAD = 34, 110, 7.2, 18


@dataclass(frozen=True)
class GraphDrawing:
    """A drawing of a compiled graph: ``mermaid`` text and an offline ``svg``."""

    mermaid: str
    svg: str

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.mermaid}\n```"

    def __str__(self) -> str:
        return self.mermaid


def draw(graph: CompiledStateGraph) -> GraphDrawing:
    """Draw a compiled graph without any network access."""
    drawable = graph.get_graph()
    return GraphDrawing(mermaid=drawable.draw_mermaid(), svg=_svg(drawable))


def _layers(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layer of each node from the first one, ignoring back edges."""
    layer = {nodes[0]: 0}
    order = {name: i for i, name in enumerate(nodes)}
    for _ in nodes:  # relax; edges to an earlier-declared node are back edges
        for source, target in edges:
            if source in layer and source != target and order[target] > order[source]:
                layer[target] = max(layer.get(target, 0), layer[source] + 1)
    for name in nodes:
        layer.setdefault(name, max(layer.values(), default=0) + 1)
    return layer


def _svg(drawable: object) -> str:
    nodes = list(drawable.nodes)  # type: ignore[attr-defined]
    start = next((n for n in nodes if n == "__start__"), nodes[0])
    end = [n for n in nodes if n == "__end__"]
    nodes = [start, *[n for n in nodes if n not in (start, "__end__")], *end]
    edges = [(e.source, e.target, str(e.data) if e.data else "", e.conditional) for e in drawable.edges]  # type: ignore[attr-defined]
    layer = _layers(nodes, [(s, t) for s, t, _, _ in edges])
    rows: dict[int, list[str]] = {}
    for name in nodes:
        rows.setdefault(layer[name], []).append(name)
    width_of = {n: len(n) * _CHAR_W + 2 * _PAD for n in nodes}
    canvas_w = max(sum(width_of[n] + 60 for n in row) for row in rows.values()) + 520
    pos: dict[str, tuple[float, float]] = {}
    for depth, row in rows.items():
        total = sum(width_of[n] for n in row) + 60 * (len(row) - 1)
        x = (canvas_w - total) / 2
        for name in row:
            pos[name] = (x + width_of[name] / 2, 30 + depth * _ROW_H)
            x += width_of[name] + 60
    height = 30 + max(rows) * _ROW_H + _BOX_H + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{canvas_w:.0f}" height="{height:.0f}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
    ]
    detours = 0
    for source, target, label, conditional in edges:
        (x1, y1), (x2, y2) = pos[source], pos[target]
        dash = ' stroke-dasharray="5,4"' if conditional else ""
        span = abs(layer[target] - layer[source])
        if source == target:  # a loop: an arc on the right of the box
            right = x1 + width_of[source] / 2
            path = f"M {right} {y1 + 8} C {right + 60} {y1 - 10}, {right + 60} {y1 + 44}, {right} {y1 + 26}"
            lx, ly, anchor = right + 48, y1 + 21, "start"
        else:
            down = y2 >= y1
            sy, ty = (y1 + _BOX_H, y2) if down else (y1, y2 + _BOX_H)
            if span > 1:  # go around the layers in between, alternating sides
                detours += 1
                side = -1 if detours % 2 else 1
                cx = canvas_w / 2 + side * (canvas_w / 2 - 40 - 25 * (detours // 2))
                path = f"M {x1:.1f} {sy} C {cx:.1f} {sy + 40}, {cx:.1f} {ty - 40}, {x2:.1f} {ty}"
                lx, ly, anchor = (cx + x2) / 2 - side * 4, ty - 26, "end" if side < 0 else "start"
            else:
                path = f"M {x1:.1f} {sy} C {x1:.1f} {(sy + ty) / 2}, {x2:.1f} {(sy + ty) / 2}, {x2:.1f} {ty}"
                lx, ly, anchor = x2 + 6, ty - 12, "start"
        out.append(f'<path d="{path}" fill="none" stroke="#555"{dash} marker-end="url(#arrow)"/>')
        if label:
            out.append(
                f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" fill="#333" '
                f'stroke="white" stroke-width="3" paint-order="stroke">{escape(label)}</text>'
            )
    for name in nodes:
        x, y = pos[name]
        w = width_of[name]
        terminal = name in ("__start__", "__end__")
        fill = "#bfb6fc" if name == "__end__" else ("#ffffff" if terminal else "#f2f0ff")
        radius = _BOX_H / 2 if terminal else 6
        out.append(
            f'<rect x="{x - w / 2:.1f}" y="{y}" width="{w:.1f}" height="{_BOX_H}" rx="{radius}" fill="{fill}" stroke="#6b5fd3"/>'
            f'<text x="{x:.1f}" y="{y + _BOX_H / 2 + 4}" text-anchor="middle">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
