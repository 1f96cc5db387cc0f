"""Display: offline drawings of graphs (``viz`` with its ``_layout``), matplotlib plots of a trace
(``plots``, the optional ``viz`` extra, imported only when a plot is asked for), the Jupyter cards
(``cards``) and the display methods a session offers (``session_display``).

Display helpers take what they draw as arguments. May import: ``session_graph.resize``,
``session_graph.accounting`` and the root foundations; never the facade (``session``).
"""
