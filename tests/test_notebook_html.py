"""The notebooks as nbconvert's HTML shows them offline: graphs and plots are inline images.

Each notebook is executed (nbclient, the kernel nbmake uses) and converted with nbconvert's
HTMLExporter, the way a user shares one. Every graph drawing and plot must reach the HTML
as an inline SVG or a base64 image (a Mermaid block would need a CDN script to render), and
nothing in the cells' outputs may point at the network.
"""

from __future__ import annotations

from pathlib import Path
import re

from nbclient import NotebookClient
from nbconvert import HTMLExporter
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
NETWORK = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|import\s[^;\n]*["']https?://""")
# nbconvert's display priority: the first of these an output has is the one the HTML shows
PRIORITY = ("text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png", "image/jpeg", "text/markdown", "text/plain")


def executed(path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def shown(output: nbformat.NotebookNode) -> str | None:
    data = output.get("data") or {}
    return next((mime for mime in PRIORITY if mime in data), None)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_graphs_and_plots_show_offline_in_nbconvert_html(path: Path) -> None:
    notebook = executed(path)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    rich = [o for o in outputs if o.get("output_type") in ("display_data", "execute_result")]
    drawings = [o for o in rich if "GraphDrawing" in str((o.get("data") or {}).get("text/plain", ""))]
    figures = [o for o in rich if "Figure" in str((o.get("data") or {}).get("text/plain", ""))]
    assert drawings, f"{path.name} should draw its graph"
    assert figures or path.name.startswith("03_"), f"{path.name} should plot the resize trace"
    for output in drawings + figures:
        assert shown(output) in ("image/svg+xml", "image/png"), f"{path.name}: {output['data'].get('text/plain')} shows as {shown(output)}"
    for output in rich:  # no Mermaid block left for a CDN script to render
        assert not str((output.get("data") or {}).get("text/markdown", "")).startswith("```mermaid") or shown(output) != "text/markdown"

    html, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    body = html[html.index("<main>") : html.rindex("</main>")]  # the cells; the page template is nbconvert's
    inline = body.count("<svg") + body.count('src="data:image/svg+xml;base64,') + body.count('src="data:image/png;base64,')
    assert inline >= len(drawings) + len(figures)
    assert not NETWORK.findall(body), f"{path.name}: network references in the outputs: {NETWORK.findall(body)[:3]}"
