"""Retrieval: ranked search over messages and long-term memories (``memory.bm25``, the prefilter, ``recall``).

- ``tokenize``: the terms of a text or query (stems, CJK, dates), shared by every index.
- ``bm25``: an incremental in-memory BM25 index (numpy, imported on first use), with owners and tombstones.
- ``fusion``: reciprocal-rank (small k) and normalised-score fusion of rankings.
- ``aggregate``: session-level ranking from message hits.
- ``dense``: optional dense retrieval through any LangChain ``Embeddings``.
- ``rerank``: optional reranking by a model or cross-encoder the caller passes.
- ``search``: the pipeline over a ``Source`` (a store's index or a session's messages).
- ``messages``: a ``Source`` over messages in memory.
- ``session_search``: ``Session.search``/``asearch`` (typed by the ``SearchedSession`` Protocol).

Stores keep their indexes in ``stores.search_index`` (JSONL) and ``stores.search_sql``
(SQLite FTS5, Postgres). Nothing here imports stores, sessions or agents.
"""
