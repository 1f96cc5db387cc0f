"""The resize machine: the session state, its accounting, the policy, the graph and its nodes, one run.

Owns ``SessionState`` and ``ResizeContext`` (``state``), the lazily paged full history (``history``),
the per-message ledger and window totals (``ledger``), the policy that judges a turn (``policy``), the
handlers a session calls out to (``handlers``), the LangGraph graph (``graph``, the only place edges
live) and its nodes (``nodes/``, one module per node), one resize and its commit to the state
(``run``), what a session owns and the glue of a run over it (``session_run``: ``SessionCore``),
the trace of runs and its recording (``trace``, ``trace_recording``), the view: the messages
sent to the model, read from the state and the ledger (``view``), and ``Session``'s configuration
methods (``session_config``: settings and plug points, typed by the ``ConfiguredSession`` Protocol).

May import: ``session_graph.compression``, ``session_graph.display`` (the view's Jupyter card),
``session_graph.accounting`` and the root foundations. Never the facade (``session``), memory,
commit, interop, stores or integrations.
"""
