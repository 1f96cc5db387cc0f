"""Offline drawings of graphs: an SVG every notebook frontend shows, Mermaid when asked.

LangGraph's ``draw_mermaid_png`` posts the diagram to a web service, and a Mermaid block
needs a script from the network in nbconvert's HTML; here nothing leaves the machine.
``draw(graph)`` lays the graph out (``_layout.py``: layers, labels on their edges, no
wasted width) and returns a ``GraphDrawing`` whose Jupyter display is the SVG alone
(JupyterLab, VS Code, nbconvert HTML and GitHub's notebook view all render it);
``format="mermaid"`` displays the Mermaid text instead. ``highlight`` draws one run's route
over the graph: a resize's trace record (``session.trace[-1]``) or a list of node names.
Any LangGraph graph can be drawn, not only the resize graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
import itertools
from pathlib import Path
from typing import Any, Literal

from session_graph.display._layout import NODE_H, Layout, layout, text_width
from session_graph.errors import ConfigurationError

__all__ = ["GraphDrawing", "draw"]

START, END = "__start__", "__end__"
_NAMES = {START: "start", END: "end"}
_INK, _EDGE, _ROUTE = "#333", "#666", "#d9480f"
_FILL, _STROKE, _ROUTE_FILL = "#f2f0ff", "#6b5fd3", "#ffe8cc"


@dataclass(frozen=True)
class GraphDrawing:
    """A drawing of a graph: ``svg`` (shown in notebooks), ``mermaid`` text, and which to show.

    Attributes:
        mermaid: the Mermaid text (with the route's nodes classed ``route`` when highlighted).
        svg: the SVG laid out offline.
        format: ``"svg"`` (the default display) or ``"mermaid"`` (displayed as a Mermaid block).
    """

    mermaid: str
    svg: str
    format: Literal["svg", "mermaid"] = "svg"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """One rich format only: frontends prefer Markdown to SVG, so offering both hides the SVG."""
        if self.format == "mermaid":
            return {"text/markdown": f"```mermaid\n{self.mermaid}\n```", "text/plain": self.mermaid}
        return {"image/svg+xml": self.svg, "text/plain": f"<GraphDrawing: SVG, {len(self.svg):,} bytes; .mermaid for text>"}

    def save(self, path: str | Path) -> Path:
        """Write the SVG (``.svg``) or the Mermaid text (``.mmd``, ``.md``) to ``path``."""
        path = Path(path)
        path.write_text(self.svg if path.suffix.lower() == ".svg" else self.mermaid, encoding="utf-8")
        return path

    def __str__(self) -> str:
        return self.mermaid


def draw(
    graph: Any,
    *,
    format: Literal["svg", "mermaid"] = "svg",
    highlight: Any = None,
    title: str | None = None,
) -> GraphDrawing:
    """Draw a LangGraph graph without any network access.

    Args:
        graph: a compiled graph (or anything with ``get_graph()``), or a drawable graph.
        format: what notebooks display: ``"svg"`` or ``"mermaid"``.
        highlight: a run's route to draw over the graph: a trace record (with ``route``
            and ``node_ms``), or node names in the order visited.
        title: a line above the drawing.

    Raises:
        ConfigurationError: an unknown format, or a highlight naming nodes the graph lacks.
    """
    if format not in ("svg", "mermaid"):
        raise ConfigurationError(f"format must be 'svg' or 'mermaid', got {format!r}.")
    drawable = graph.get_graph() if hasattr(graph, "get_graph") else graph
    nodes = [str(n) for n in drawable.nodes]
    edges = [(str(e.source), str(e.target), str(e.data) if e.data else "", bool(e.conditional)) for e in drawable.edges]
    route, times = _route(highlight, nodes)
    mermaid = drawable.draw_mermaid()
    if route:
        mermaid = mermaid.rstrip() + "\n\tclassDef route fill:#ffe8cc,stroke:#d9480f,stroke-width:2px\n" + \
            f"\tclass {','.join(sorted(set(route)))} route\n"
    return GraphDrawing(mermaid=mermaid, svg=_svg(nodes, edges, route, times, title), format=format)


def _route(highlight: Any, nodes: list[str]) -> tuple[list[str], dict[str, tuple[int, float]]]:
    """The route to highlight, with START and END around it, and (visits, ms) per node."""
    if highlight is None:
        return [], {}
    names = getattr(highlight, "route", highlight)
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise ConfigurationError(f"highlight must be a trace record or a list of node names, got {highlight!r:.80}.")
    names = [str(n) for n in names]
    missing = [n for n in names if n not in nodes]
    if missing:
        raise ConfigurationError(f"highlight names {', '.join(map(repr, missing))}, not nodes of this graph ({', '.join(nodes)}).")
    times: dict[str, tuple[int, float]] = {}
    for name, ms in zip(names, getattr(highlight, "node_ms", None) or [None] * len(names), strict=False):
        visits, total = times.get(name, (0, 0.0))
        times[name] = (visits + 1, total + (ms or 0.0))
    if not getattr(highlight, "node_ms", None):
        times = {name: (count, -1.0) for name, count in Counter(names).items()}
    route = ([START] if START in nodes and names and names[0] != START else []) + names
    if END in nodes and getattr(highlight, "committed", True) and route and route[-1] != END:
        route.append(END)
    return route, times


def _node_label(name: str) -> str:
    return _NAMES.get(name, name)


def _svg(
    nodes: list[str],
    edges: list[tuple[str, str, str, bool]],
    route: list[str],
    times: dict[str, tuple[int, float]],
    title: str | None,
) -> str:
    ordered = [n for n in nodes if n == START] + [n for n in nodes if n not in (START, END)] + [n for n in nodes if n == END]
    height = NODE_H + (10 if times else 0)
    sizes = {n: (max(text_width(_node_label(n)) + 28, 56.0), height) for n in ordered}
    placed = layout(ordered, edges, sizes)
    taken = set(itertools.pairwise(route))
    top = 26.0 if title else 0.0
    legend, legend_h = _legend(bool(route), placed.width)
    width = max(placed.width, 260.0, text_width(title or "", 13) * 1.08 + 32)
    total_h = placed.height + top + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {width:.0f} {total_h:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f"<title>{escape(title or 'graph')}</title>",
        "<defs>" + "".join(
            f'<marker id="{key}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="{size}" '
            f'markerHeight="{size}" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>'
            for key, color, size in (("sg-arrow", _EDGE, 8), ("sg-arrow-route", _ROUTE, 10))
        ) + "</defs>",
        f'<rect width="{width:.0f}" height="{total_h:.0f}" fill="white"/>',
    ]
    if title:
        out.append(f'<text x="16" y="18" font-size="13" font-weight="bold" fill="{_INK}">{escape(title)}</text>')
    out.append(f'<g transform="translate(0 {top:.0f})">')
    out.extend(_edges(placed, taken, bool(route)))
    out.extend(_nodes(placed, set(route), times, bool(route)))
    out.append("</g>")
    out.append(f'<g transform="translate(0 {placed.height + top:.0f})">{legend}</g>')
    out.append("</svg>")
    return "\n".join(out)


def _edges(placed: Layout, taken: set[tuple[str, str]], highlighting: bool) -> list[str]:
    out: list[str] = []
    for hot_pass in (False, True):  # the route's edges last, on top
        for route in placed.routes:
            hot = (route.source, route.target) in taken
            if hot != hot_pass:
                continue
            color = _ROUTE if hot else _EDGE
            style = f'stroke="{color}" stroke-width="{2.4 if hot else 1.2}"'
            if route.conditional and not hot:
                style += ' stroke-dasharray="5,4"'
            if highlighting and not hot:
                style += ' opacity="0.45"'
            marker = "sg-arrow-route" if hot else "sg-arrow"
            if route.loop:
                x, y = route.points[0]
                path = f"M {x:.1f} {y - 7:.1f} C {x + 40:.1f} {y - 24:.1f}, {x + 40:.1f} {y + 24:.1f}, {x + 1:.1f} {y + 7:.1f}"
                out.append(f'<path d="{path}" fill="none" {style} marker-end="url(#{marker})"/>')
                for i, line in enumerate(route.label):
                    out.append(f'<text x="{x + 36:.1f}" y="{y + 4 + (i - (len(route.label) - 1) / 2) * 14:.1f}" font-size="11" '
                               f'fill="{color}">{escape(line)}</text>')
                continue
            (x0, y0), rest = route.points[0], route.points[1:]
            path = f"M {x0:.1f} {y0:.1f}"
            for x1, y1 in rest:
                mid = (y0 + y1) / 2
                path += f" C {x0:.1f} {mid:.1f}, {x1:.1f} {mid:.1f}, {x1:.1f} {y1:.1f}"
                x0, y0 = x1, y1
            out.append(f'<path d="{path}" fill="none" {style} marker-end="url(#{marker})"/>')
            box = route.label_box
            if box is not None and route.label:
                out.append(f'<rect x="{box.x - box.w / 2:.1f}" y="{box.y - box.h / 2:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
                           f'rx="4" fill="white" stroke="{color if hot else "#ddd"}"/>')
                for i, line in enumerate(route.label):
                    y = box.y + 4 + (i - (len(route.label) - 1) / 2) * 15
                    out.append(f'<text x="{box.x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="11" fill="{color if hot else _INK}">'
                               f"{escape(line)}</text>")
    return out


def _nodes(placed: Layout, visited: set[str], times: dict[str, tuple[int, float]], highlighting: bool) -> list[str]:
    out: list[str] = []
    for name, box in placed.nodes.items():
        terminal = name in (START, END)
        hot = name in visited
        fill = _ROUTE_FILL if hot else ("#ffffff" if terminal else _FILL)
        stroke = _ROUTE if hot else _STROKE
        radius = box.h / 2 if terminal else 6
        fade = ' opacity="0.55"' if highlighting and not hot else ""
        out.append(f'<g{fade}><rect x="{box.x - box.w / 2:.1f}" y="{box.y - box.h / 2:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
                   f'rx="{radius}" fill="{fill}" stroke="{stroke}" stroke-width="{2 if hot else 1}"/>')
        label_y = box.y + 4 - (6 if name in times and not terminal else 0)
        out.append(f'<text x="{box.x:.1f}" y="{label_y:.1f}" text-anchor="middle" fill="{_INK}">{escape(_node_label(name))}</text>')
        if name in times and not terminal:
            visits, ms = times[name]
            took = "" if ms < 0 else f"{ms:.1f} ms" if ms >= 1 else f"{ms * 1000:.0f} µs"
            note = (f"{visits} visits, " if visits > 1 else "") + took
            out.append(f'<text x="{box.x:.1f}" y="{box.y + 12:.1f}" text-anchor="middle" font-size="10" fill="{_ROUTE}">'
                       f"{escape(note.strip())}</text>")
        out.append("</g>")
    return out


def _legend(highlighting: bool, width: float) -> tuple[str, float]:
    """Samples of the edge styles, wrapped to the drawing's width; returns (svg, height)."""
    entries = [("solid", "always taken"), ("dashed", "chosen at run time")]
    if highlighting:
        entries.append(("route", "this run's route"))
    out, x, y = [], 16.0, 8.0
    for style, text in entries:
        item_w = 34 + text_width(text, 11) + 18
        if x + item_w > max(width, 260.0) - 8 and x > 16:
            x, y = 16.0, y + 18
        color = _ROUTE if style == "route" else _EDGE
        dash = ' stroke-dasharray="5,4"' if style == "dashed" else ""
        out.append(f'<line x1="{x:.1f}" y1="{y + 5:.1f}" x2="{x + 26:.1f}" y2="{y + 5:.1f}" stroke="{color}" '
                   f'stroke-width="{2.4 if style == "route" else 1.2}"{dash}/>')
        out.append(f'<text x="{x + 32:.1f}" y="{y + 9:.1f}" font-size="11" fill="#555">{escape(text)}</text>')
        x += item_w
    return "".join(out), y + 24
