"""A dependency-free BM25 index: words, character n-grams of longer words, CJK bigrams.

Terms of a text are its lower-cased words, the 3- to 5-character grams of words of six
characters or more (so ``deploys`` meets ``deployment``), and for runs of CJK characters
every character and every pair of neighbours (Chinese and Japanese have no spaces).
Scores are Okapi BM25 (k1 1.2, b 0.75). Used by the prefilter, the memory search tool and
the file store's ``search(query=...)``; no embedding model is needed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
import math
import re
import unicodedata

__all__ = ["Bm25", "terms", "word_terms"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "to", "was", "were", "will", "with", "user", "users", "prefers", "likes"]
)


COMMON_FROM = 500
"""Above this many documents, a term found in more than half of them is not scored: so a
query costs what its distinctive terms cost, not the size of the index."""


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF
            or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF)


def terms(text: str) -> list[str]:
    """The BM25 terms of a text (see the module docstring)."""
    out: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if any(_is_cjk(ch) for ch in word):
            run = ""
            for ch in [*word, " "]:
                if _is_cjk(ch):
                    run += ch
                    continue
                if run:
                    out.extend(run)
                    out.extend(run[i : i + 2] for i in range(len(run) - 1))
                    run = ""
                if ch != " ":
                    out.append(ch)
            continue
        if word in _STOP:
            continue
        out.append(word)
        if len(word) >= 6:
            out.extend(f"#{word[i : i + n]}" for n in (3, 4, 5) for i in range(len(word) - n + 1))
    return out


def word_terms(text: str) -> list[str]:
    """The whole-word terms of a text (no character grams): what two statements share."""
    return [term for term in terms(text) if not term.startswith("#")]


class Bm25:
    """An in-memory BM25 index over documents keyed by any hashable id."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs: dict[Hashable, Counter[str]] = {}
        self._lengths: dict[Hashable, int] = {}
        self._postings: dict[str, set[Hashable]] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, doc_id: Hashable, text: str) -> None:
        """Index (or re-index) a document."""
        if doc_id in self._docs:
            self.remove(doc_id)
        counts = Counter(terms(text))
        self._docs[doc_id] = counts
        self._lengths[doc_id] = sum(counts.values())
        self._total += self._lengths[doc_id]
        for term in counts:
            self._postings.setdefault(term, set()).add(doc_id)

    def remove(self, doc_id: Hashable) -> None:
        """Drop a document from the index (no-op if absent)."""
        counts = self._docs.pop(doc_id, None)
        if counts is None:
            return
        self._total -= self._lengths.pop(doc_id)
        for term in counts:
            holders = self._postings.get(term)
            if holders is not None:
                holders.discard(doc_id)
                if not holders:
                    del self._postings[term]

    def search(self, query: str, limit: int = 5, among: Iterable[Hashable] | None = None) -> list[tuple[Hashable, float]]:
        """The best ``limit`` documents for ``query`` (score > 0), best first; ``among`` restricts them."""
        allowed = set(among) if among is not None else None
        n = len(self._docs)
        if not n:
            return []
        average = self._total / n or 1.0
        scores: dict[Hashable, float] = {}
        for term, weight in Counter(terms(query)).items():
            holders = self._postings.get(term)
            if not holders or (n > COMMON_FROM and len(holders) * 2 > n):
                continue  # in most documents of a large index: worth < log 2 each, and would cost O(n) to score
            idf = math.log(1 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
            for doc_id in holders:
                if allowed is not None and doc_id not in allowed:
                    continue
                tf = self._docs[doc_id][term]
                norm = tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * self._lengths[doc_id] / average))
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * norm * weight
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], str(pair[0])))
        return ranked[:limit]
