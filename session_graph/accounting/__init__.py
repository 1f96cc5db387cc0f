"""Accounting: what a message costs and how much of it fits, as pure functions and small values.

Owns message sizes in chars (``sizing``), token counters and cost rules (``tokens``), the size of inline
images read from their headers (``image_size``), attachment summaries (``attachments``), tool-call units
and running window totals (``window``) and the budget arithmetic (``budget``: the window's room, the
prune cut, fold chunks, the view's plan). Nothing here holds a session.

May import: ``session_graph._base``, ``errors``, ``settings``, ``messages``.
"""
