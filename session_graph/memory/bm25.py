"""BM25 over memories: retrieval's tokenizer and index behind the memory API.

Memories and messages are searched with one tokenizer (``retrieval.tokenize``: English stems,
CJK characters and bigrams, dates) and one incremental BM25 index (``retrieval.bm25``), so
"deploys" meets "deployment", "2024年3月15日" meets "March 15", and a fact found in a message
is found the same way in a memory. On top, memory's own stop words: almost every memory says
"the user prefers / likes ...", words that would only blur the ranking. Used by the
prefilter, ``recall``, the memory search tool and the file store's ``search(query=...)``;
no embedding model is needed.

``grams`` gives a second lexical field: the character 4-grams of each word (padded, so a
word's start and end are grams of their own). Stemmers leave "allergic" / "allergy",
"bicycle" / "cycles", "email" / "mail", "indentation" / "indenting" apart; their grams meet.
The prefilter fuses a grams index with the word index (``Bm25(analyzer=grams)``); CJK text
already gives characters and bigrams as words, so grams are made of other scripts' words only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
import re
import threading
import unicodedata

from session_graph.retrieval.bm25 import Bm25Index
from session_graph.retrieval.tokenize import _STOP, is_cjk, stem
from session_graph.retrieval.tokenize import terms as _terms

__all__ = ["Bm25", "grams", "terms", "word_terms"]

_MEMORY_WORDS = frozenset(("user", "users", "prefers", "likes"))
_MEMORY_STOP = frozenset(stem(word) for word in _MEMORY_WORDS)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
COMMON_FROM = 500
"""Above this many documents, a term found in more than half of them is not scored: so a
query costs what its distinctive terms cost, not the size of the index."""
_COMPACT_FROM = 256
"""Removed documents stay as tombstones in ``Bm25Index``; past this many (and more than the
live ones) the index is rebuilt from the live documents' terms, so an item updated often
does not make every search pay for its old versions."""


def terms(text: str) -> list[str]:
    """The BM25 terms of a memory's text: ``retrieval.tokenize.terms`` less memory's stop words."""
    return [term for term in _terms(text) if term not in _MEMORY_STOP]


def grams(text: str, n: int = 4) -> list[str]:
    """The character ``n``-grams of a text's words (``_word_`` padded; stop words and CJK left out)."""
    out: list[str] = []
    for run in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        words = "".join(" " if is_cjk(ch) else ch for ch in run).split() if any(is_cjk(ch) for ch in run) else [run]
        for word in words:
            if len(word) < 3 or word in _STOP or word in _MEMORY_WORDS or word.isdigit():
                continue
            padded = f"_{word}_"
            out.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return out


def word_terms(text: str) -> list[str]:
    """The word terms of a text (the same as ``terms``): what two statements share."""
    return terms(text)


class Bm25:
    """An in-memory BM25 index over texts keyed by any hashable id (``retrieval.bm25.Bm25Index``)."""

    def __init__(self, k1: float = 1.2, b: float = 0.75, *, analyzer: Callable[[str], list[str]] = terms) -> None:
        self.k1, self.b, self.analyzer = k1, b, analyzer
        self._index = Bm25Index(k1, b)
        self._terms: dict[Hashable, list[str]] = {}
        self._lock = threading.Lock()  # the prefilter searches while another thread may re-index

    def __len__(self) -> int:
        return len(self._index)

    def add(self, doc_id: Hashable, text: str) -> None:
        """Index (or re-index) a document."""
        words = self.analyzer(text)
        with self._lock:
            self._terms[doc_id] = words
            self._index.add(doc_id, words)
            self._compact()

    def remove(self, doc_id: Hashable) -> None:
        """Drop a document from the index (no-op if absent)."""
        with self._lock:
            if self._terms.pop(doc_id, None) is not None:
                self._index.remove(doc_id)
                self._compact()

    def _compact(self) -> None:
        dead = self._index.ids - len(self._index)
        if dead > _COMPACT_FROM and dead > len(self._index):
            fresh = Bm25Index(self.k1, self.b)
            for doc_id, words in self._terms.items():
                fresh.add(doc_id, words)
            self._index = fresh

    def search(self, query: str, limit: int = 5, among: Iterable[Hashable] | None = None) -> list[tuple[Hashable, float]]:
        """The best ``limit`` documents for ``query`` (score > 0), best first; ``among`` restricts them."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        if not len(self._index):
            return []
        words = list(dict.fromkeys(self.analyzer(query)))
        with self._lock:
            allow = None
            if among is not None:
                allow = np.zeros(self._index.ids, dtype=bool)
                for doc_id in among:
                    doc = self._index.doc_id(doc_id)
                    if doc is not None:
                        allow[doc] = True
            return self._index.search(words, limit, allow=allow, common_from=COMMON_FROM)
