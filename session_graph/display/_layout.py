"""A layered layout for small directed graphs (pure arithmetic; ``viz.py`` draws it).

The usual steps (Sugiyama), kept small: back edges found by a depth-first search from the
first node are reversed; nodes get the longest-path layer; every edge that spans layers
gets a point on each rank in between, and a labelled edge carries its label on the first
of them, so a label is laid out like a node and never overlaps one; ranks are ordered by
barycentres; x positions follow the neighbours as closely as the widths allow (isotonic
regression per rank, a few sweeps), so there is no empty width; self-loops sit on the right
of their node with room kept for their label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
import itertools

__all__ = ["Layout", "Placed", "Route", "layout", "text_width"]

NODE_H = 34.0
LABEL_LINE_H = 15.0
GAP_X = 22.0  # between neighbours in a rank
GAP_Y = 22.0  # between ranks
MARGIN = 16.0
LOOP_W = 34.0  # a self-loop's bulge right of its node


def text_width(text: str, size: float = 12.0) -> float:
    """An estimate of the width of ``text`` in a sans-serif font of ``size`` px."""
    width = 0.0
    for char in text:
        if char in "il.,:;'|!()[]":
            width += 0.3
        elif char in "mwMW@%":
            width += 0.85
        elif char.isupper() or char in "0123456789_-=<>/":
            width += 0.62
        elif char == " ":
            width += 0.28
        else:
            width += 0.53
    return width * size


def wrap(text: str, width: int = 24) -> list[str]:
    """``text`` on lines of about ``width`` characters, split at spaces."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


@dataclass
class Placed:
    """A node or label box: its centre and size."""

    x: float
    y: float
    w: float
    h: float


@dataclass
class Route:
    """An edge as drawn: the points it passes, source side first; ``label`` placed on it."""

    source: str
    target: str
    points: list[tuple[float, float]]
    label: list[str] = field(default_factory=list)
    label_box: Placed | None = None
    conditional: bool = False
    back: bool = False
    loop: bool = False


@dataclass
class Layout:
    """Where everything goes, in px."""

    nodes: dict[str, Placed]
    routes: list[Route]
    width: float
    height: float


@dataclass
class _Item:
    key: tuple[object, ...]
    w: float
    h: float
    right: float = 0.0  # extra room on the right (a self-loop and its label)
    x: float = 0.0


def _back_edges(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> set[int]:
    out: dict[str, list[int]] = {n: [] for n in nodes}
    for index, (source, _target) in enumerate(edges):
        out[source].append(index)
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    back: set[int] = set()
    for root in nodes:
        if root in state:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            node, todo = stack[-1]
            index = next(todo, None)
            if index is None:
                state[node] = 2
                stack.pop()
                continue
            target = edges[index][1]
            if target == node:
                continue
            if state.get(target) == 1:
                back.add(index)
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(out[target])))
    return back


def _barycentre(item: _Item, near: dict[tuple[object, ...], list[tuple[object, ...]]], order: dict[tuple[object, ...], int]) -> float:
    around = near[item.key]
    return sum(order[k] for k in around) / len(around) if around else float(order[item.key])


def _pava(desired: list[float], gaps: list[float], weights: list[float]) -> list[float]:
    """x minimising the weighted squared distance to ``desired`` with x[i+1] - x[i] >= gaps[i]."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for d, o, w in zip(desired, offsets, weights, strict=True):
        blocks.append([(d - o) * w, w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight
            blocks[-1][2] += count
    fitted: list[float] = []
    for total, weight, count in blocks:
        fitted.extend([total / weight] * int(count))
    return [f + o for f, o in zip(fitted, offsets, strict=True)]


def _spread_ports(
    chains: list[list[tuple[object, ...]]], items: dict[tuple[object, ...], _Item], placed: dict[str, Placed]
) -> dict[tuple[int, int], tuple[float, float]]:
    """Where each chain leaves its top node (bottom side) and enters its bottom node (top side),
    spread along the side in the order of the neighbours, so edges do not share a point."""
    sides: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for chain in chains:
        sides.setdefault((str(chain[0][1]), 0), []).append((items[chain[1]].x, id(chain)))
        sides.setdefault((str(chain[-1][1]), -1), []).append((items[chain[-2]].x, id(chain)))
    ports: dict[tuple[int, int], tuple[float, float]] = {}
    for (name, end), entries in sides.items():
        node = placed[name]
        entries.sort()
        spacing = min(14.0, (node.w - 16) / max(len(entries) - 1, 1))
        y = node.y + node.h / 2 if end == 0 else node.y - node.h / 2
        for i, (_x, chain_id) in enumerate(entries):
            ports[(chain_id, end)] = (node.x + (i - (len(entries) - 1) / 2) * spacing, y)
    return ports


def layout(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str, str, bool]],
    sizes: dict[str, tuple[float, float]],
) -> Layout:
    """Lay out ``nodes`` (first: the entry) and ``edges`` ``(source, target, label, conditional)``.

    ``sizes`` gives each node's box (width, height).
    """
    pairs = [(s, t) for s, t, _, _ in edges]
    back = _back_edges(nodes, pairs)
    forward = [(t, s) if i in back else (s, t) for i, (s, t) in enumerate(pairs)]
    layer = {n: 0 for n in nodes}
    for _ in nodes:  # longest path over the acyclic edges
        changed = False
        for source, target in forward:
            if source != target and layer[target] < layer[source] + 1:
                layer[target], changed = layer[source] + 1, True
        if not changed:
            break
    loops: dict[str, list[int]] = {}
    ranks: dict[int, list[_Item]] = {}
    items: dict[tuple[object, ...], _Item] = {}

    def add(rank: int, item: _Item) -> _Item:
        ranks.setdefault(rank, []).append(item)
        items[item.key] = item
        return item

    for name in nodes:
        w, h = sizes[name]
        add(2 * layer[name], _Item(("node", name), w, h))
    chains: list[list[tuple[object, ...]]] = []
    labels: dict[int, list[str]] = {}
    for index, (source, target, label, _conditional) in enumerate(edges):
        if source == target:
            loops.setdefault(source, []).append(index)
            continue
        top, bottom = forward[index]
        chain: list[tuple[object, ...]] = [("node", top)]
        lines = wrap(label) if label else []
        labels[index] = lines
        label_rank = 2 * layer[bottom] - 1 if index in back else 2 * layer[top] + 1
        for rank in range(2 * layer[top] + 1, 2 * layer[bottom]):
            if lines and rank == label_rank:
                w = max(text_width(line, 11) for line in lines) + 10
                item = add(rank, _Item(("label", index), w, LABEL_LINE_H * len(lines) + 4))
            else:
                item = add(rank, _Item(("via", index, rank), 2.0, 0.0))
            chain.append(item.key)
        chain.append(("node", bottom))
        chains.append(chain)
    for name, indices in loops.items():
        width = max((max(text_width(line, 11) for line in wrap(edges[i][2])) for i in indices if edges[i][2]), default=0.0)
        items[("node", name)].right = LOOP_W + width + 6

    up: dict[tuple[object, ...], list[tuple[object, ...]]] = {key: [] for key in items}
    down: dict[tuple[object, ...], list[tuple[object, ...]]] = {key: [] for key in items}
    for chain in chains:
        for a, b in itertools.pairwise(chain):
            down[a].append(b)
            up[b].append(a)

    # order: barycentres, sweeping down and up
    order = {key: i for i, key in enumerate(items)}
    for sweep in range(6):
        neighbours = up if sweep % 2 == 0 else down
        for rank in sorted(ranks, reverse=sweep % 2 == 1):
            row = ranks[rank]
            row.sort(key=lambda item, near=neighbours: _barycentre(item, near, order))
            for i, item in enumerate(row):
                order[item.key] = i

    # x: start packed, then follow neighbours within the widths (isotonic regression per rank)
    def pack(row: list[_Item], desired: list[float]) -> None:
        gaps = [a.w / 2 + a.right + GAP_X + b.w / 2 for a, b in itertools.pairwise(row)]
        weights = [4.0 if item.key[0] == "via" else 2.0 if item.key[0] == "label" else 1.0 for item in row]
        for item, x in zip(row, _pava(desired, gaps, weights), strict=True):
            item.x = x

    for row in ranks.values():
        pack(row, [0.0] * len(row))
    for sweep in range(8):
        neighbours = up if sweep % 2 == 0 else down
        for rank in sorted(ranks, reverse=sweep % 2 == 1):
            row = ranks[rank]
            desired = []
            for item in row:  # a point of a long edge follows both its ends: the edge stays straight
                keys = up[item.key] + down[item.key] if item.key[0] == "via" else neighbours[item.key] or up[item.key] + down[item.key]
                around = [items[k].x for k in keys]
                desired.append(sum(around) / len(around) if around else item.x)
            pack(row, desired)
    left = min(item.x - item.w / 2 for item in items.values())
    right = max(item.x + item.w / 2 + item.right for item in items.values())
    shift = MARGIN - left
    for item in items.values():
        item.x += shift

    # y: each rank as tall as its tallest box
    y, centres = MARGIN, {}
    for rank in sorted(ranks):
        height = max(item.h for item in ranks[rank])
        if rank % 2 == 1 and height < 8:
            height = 8.0
        centres[rank] = y + height / 2
        y += height + GAP_Y
    rank_of = {item.key: rank for rank, row in ranks.items() for item in row}
    placed = {key[1]: Placed(item.x, centres[rank_of[key]], item.w, item.h) for key, item in items.items() if key[0] == "node"}

    ports = _spread_ports(chains, items, placed)
    routes: list[Route] = []
    for chain in chains:
        index = chain[1][1] if chain[1][0] != "node" else None
        if index is None:  # adjacent ranks cannot happen (labels sit between layers); keep it safe
            continue
        assert isinstance(index, int)
        source, target, _label, conditional = edges[index]
        points = [(items[k].x, centres[rank_of[k]]) for k in chain]
        points[0] = ports[(id(chain), 0)]
        points[-1] = ports[(id(chain), -1)]
        if index in back:  # drawn from its source (below) up to its target
            points.reverse()
        box = next((Placed(items[k].x, centres[rank_of[k]], items[k].w, items[k].h) for k in chain if k[0] == "label"), None)
        route = Route(str(source), str(target), points, labels[index], box, conditional, index in back)
        routes.append(route)
    for name, indices in loops.items():
        node = placed[name]
        for index in indices:
            routes.append(Route(name, name, [(node.x + node.w / 2, node.y)], wrap(edges[index][2]) if edges[index][2] else [],
                                None, edges[index][3], False, True))
    return Layout(placed, routes, right - left + 2 * MARGIN, y - GAP_Y + MARGIN)
