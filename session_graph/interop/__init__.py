"""Other systems' formats and the session's own documents: nanobot's JSONL records (``nanobot``),
OpenViking's session layout (``openviking``), the JSON/YAML export (``export``) and ``Session``'s
export methods over it (``session_export``, typed by the ``ExportedSession`` Protocol). Each converts
without losing a field; reading files in and writing them out through a store lives in
``session_graph.stores`` (``interop``, ``nanobot``).

May import: ``session_graph.memory`` (message parts), ``session_graph.resize`` (the state and trace
it converts), ``session_graph.accounting`` and the root foundations.
"""
