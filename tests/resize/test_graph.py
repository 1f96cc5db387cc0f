"""The resize graph: structure, drawings (offline), snapshots."""

from __future__ import annotations

import os
from pathlib import Path
import socket

import pytest

from session_graph import NODE_NAMES, GraphDrawing, Session, build_resize_graph

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    """Compare with tests/snapshots/<name>; SNAPSHOT_UPDATE=1 rewrites it."""
    path = SNAPSHOTS / name
    if os.environ.get("SNAPSHOT_UPDATE"):
        path.write_text(text)
    assert path.exists(), f"no snapshot {name}; create it with SNAPSHOT_UPDATE=1"
    assert text == path.read_text(), f"{name} changed; rerun with SNAPSHOT_UPDATE=1 if intended"


def test_default_graph_mermaid_snapshot() -> None:
    check_snapshot("resize_graph.mmd", Session().draw_mermaid())


def test_custom_type_graph_mermaid_snapshot() -> None:
    session = Session(resize_handlers={"summarize": lambda *a: a, "deep": lambda *a: a})
    check_snapshot("resize_graph_custom.mmd", session.draw_mermaid())


def test_graph_nodes_and_labelled_edges() -> None:
    graph = build_resize_graph().get_graph()
    assert set(NODE_NAMES) <= set(graph.nodes)
    labels = {(e.source, e.target): e.data for e in graph.edges if e.conditional}
    assert labels[("judge", "attachment_summary")] == "deep: chars or tokens at limit (100)"
    assert labels[("judge", "memo_update")] == "lite: messages (50) / turns (10)"
    assert labels[("judge", "__end__")] == "no resize"
    assert labels[("memo_update", "memo_update")] == "next chunk"


def test_the_drawing_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("drawing tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    drawing = Session(resize_handlers={"summarize": lambda *a: a}).draw()
    assert isinstance(drawing, GraphDrawing)
    svg = drawing._repr_mimebundle_()["image/svg+xml"]
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for name in (*NODE_NAMES, "summarize", "next chunk", "no resize"):
        assert name in svg
    assert Session().draw(format="mermaid")._repr_mimebundle_()["text/markdown"].startswith("```mermaid\n")
    check_snapshot("resize_graph.svg", svg)


def test_graphs_are_built_once_per_configuration() -> None:
    assert build_resize_graph() is build_resize_graph()
    assert Session().graph is Session().graph
