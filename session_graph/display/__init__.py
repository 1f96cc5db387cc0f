"""Display: offline drawings of graphs (``viz`` with its ``_layout``), matplotlib plots of a trace
(``plots``, the optional ``viz`` extra, imported only when a plot is drawn), the Jupyter cards
(``cards``) and the display methods a session offers (``session_display``).

Display helpers take what they draw as arguments, typed by small Protocols (``CardSession``,
``PlottedSession``, ``DrawnSession``), so this package sits low: it may import ``session_graph.accounting`` and the
root foundations only, never the resize machine or the facade that hand it their objects.
"""
