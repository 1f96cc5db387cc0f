"""The resize machine: the session state, its accounting, the policy, the graph and its nodes, one run.

Owns ``SessionState`` and ``ResizeContext`` (``state``), the lazily paged full history (``history``),
the per-message ledger and window totals (``ledger``), the policy that judges a turn (``policy``), the
handlers a session calls out to (``handlers``), the LangGraph graph (``graph``, the only place edges
live) and its nodes (``nodes/``, one module per node), one resize and its commit to the state
(``run``), the trace of runs and its recording (``trace``, ``trace_recording``) and the view: the
messages sent to the model, read from the state and the ledger (``view``).

May import: ``session_graph.compression``, ``session_graph.accounting`` and the root foundations.
Never the facade (``session``), stores, memory, commit, display or integrations.
"""
