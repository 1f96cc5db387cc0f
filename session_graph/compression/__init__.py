"""Compression: the memo or summary message the model is shown, and the model-backed updaters that write it.

Owns the memo/summary system message and its shortening by structure (``context``), the compact
transcript the models read (``transcript``), and the two updaters that fold messages into it with a
chat model (``memo.ModelMemoUpdater``, ``summary.ModelSummarizer``).

A memo model's reply that drops what the memo held is refused (``memo_check``, on the retrieval
tokenizer's terms).

May import: ``session_graph.accounting``, ``session_graph.retrieval``'s tokenizer and the root foundations (``_base``, ``errors``, ``settings``,
``messages``). It knows nothing of the session state or the resize graph.
"""
