"""Private runtime helpers every layer may use: one implementation for sync and async (``flow``, ``aio``),
ids and the clock (``ids``, with the one length cap of identifiers that become store keys), pausing the garbage collector around bulk loads (``gc``), progress callbacks
(``progress``) and the file primitives the file-backed stores share (``files``: reversible key names, the
cross-process lock, reading back to a line) and a module imported on first use (``lazy``).

May import: ``session_graph.errors`` only. Nothing here knows sessions, messages or stores.
"""
