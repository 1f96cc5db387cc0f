"""An incremental BM25 index over term lists, scored with numpy.

Documents get dense integer ids in the order they are added; each carries an owner code
(the session it belongs to), so a search can be limited to some owners without a pass
over the other documents. Adding a document is O(its terms); removing one is a tombstone
that also takes its terms out of the statistics, so the scores after removals equal a
rebuilt index's. Postings are Python lists copied into numpy arrays grown in place (capacity
doubling) when a query reads them, only the part added since the last read; the per-document
arrays grow the same way; so an add costs O(its terms) amortised, never a rebuild, and a query
costs O(postings of its terms), not O(documents). ``search(common_from=N)``: above N documents,
a term found in more than half of them is not scored (worth < log 2 each, and O(documents)).

Scores are Okapi BM25 (k1 1.2, b 0.75, idf ``log(1 + (N - df + .5) / (df + .5))``), the
same formula as SQLite FTS5's ``bm25()``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where an index first uses it: `import session_graph` stays light
    import numpy as np

__all__ = ["Bm25Index"]


class Bm25Index:
    """BM25 over documents given as term lists (see ``retrieval.tokenize.terms``).

    Args:
        k1, b: the BM25 parameters.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        import numpy as np  # loaded on first use, not by `import session_graph`
        self.k1, self.b = k1, b
        self._postings: dict[str, _Postings] = {}
        self._df: Counter[str] = Counter()
        self._lengths: list[int] = []
        self._owners: list[int] = []
        self._alive: list[bool] = []
        self._doc_terms: list[tuple[str, ...]] = []
        self._keys: list[Hashable] = []
        self._id_of: dict[Hashable, int] = {}
        self._owner_codes: dict[Hashable, int] = {}
        self._length_array = np.zeros(0, dtype=np.float64)
        self._owner_array = np.zeros(0, dtype=np.int64)
        self._alive_array = np.zeros(0, dtype=bool)
        self._count = 0
        self._total = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return key in self._id_of

    def owner_code(self, owner: Hashable) -> int:
        """The small integer standing for ``owner`` (allocated on first use)."""
        code = self._owner_codes.get(owner)
        if code is None:
            code = self._owner_codes[owner] = len(self._owner_codes)
        return code

    def add(self, key: Hashable, words: Sequence[str], owner: Hashable = None) -> int:
        """Index a document under ``key`` (re-adding a key replaces it); returns its id."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        if key in self._id_of:
            self.remove(key)
        doc = len(self._keys)
        counts = Counter(words)
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.append(doc, tf)
        self._df.update(counts.keys())
        self._keys.append(key)
        self._id_of[key] = doc
        self._lengths.append(len(words))
        self._owners.append(self.owner_code(owner))
        self._alive.append(True)
        self._doc_terms.append(tuple(counts))
        self._count += 1
        self._total += len(words)
        if doc >= len(self._length_array):
            size = max(16, 2 * (doc + 1))
            self._length_array = np.resize(self._length_array, size)
            self._owner_array = np.resize(self._owner_array, size)
            self._alive_array = np.resize(self._alive_array, size)
        self._length_array[doc] = len(words)
        self._owner_array[doc] = self._owners[doc]
        self._alive_array[doc] = True
        return doc

    def remove(self, key: Hashable) -> bool:
        """Take a document out (its id stays a tombstone); False if it was not indexed."""
        doc = self._id_of.pop(key, None)
        if doc is None:
            return False
        self._alive[doc] = False
        self._df.subtract(self._doc_terms[doc])
        self._count -= 1
        self._total -= self._lengths[doc]
        self._doc_terms[doc] = ()
        self._alive_array[doc] = False
        return True

    def remove_owner(self, owner: Hashable) -> int:
        """Take out every document of ``owner``; returns how many."""
        code = self._owner_codes.get(owner)
        if code is None:
            return 0
        gone = [self._keys[d] for d, o in enumerate(self._owners) if o == code and self._alive[d]]
        for key in gone:
            self.remove(key)
        return len(gone)

    @property
    def ids(self) -> int:
        """How many document ids were given out (removed ones included): the length of a ``mask``."""
        return len(self._keys)

    def key_of(self, doc: int) -> Hashable:
        """The key of document id ``doc`` (a removed one's too)."""
        return self._keys[doc]

    def keys_since(self, first: int) -> list[Hashable]:
        """The keys of the documents added with id ``first`` or later that are still indexed."""
        return [self._keys[d] for d in range(first, len(self._keys)) if self._alive[d]]

    def keys(self) -> list[Hashable]:
        """The keys of the indexed documents, in the order they were added."""
        return [k for d, k in enumerate(self._keys) if self._alive[d]]

    def stats(self) -> dict[str, Any]:
        """The statistics that define scores (for comparing an incremental index with a rebuilt one)."""
        return {"documents": self._count, "terms": self._total, "df": {t: n for t, n in self._df.items() if n > 0}}

    def df(self, term: str) -> int:
        """How many indexed documents hold ``term``."""
        return max(self._df.get(term, 0), 0)

    def _array(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        postings = self._postings.get(term)
        return None if postings is None else postings.view()

    def search(
        self, query: Iterable[str], limit: int = 10, *, owners: Iterable[Hashable] | None = None,
        allow: np.ndarray | None = None, common_from: int | None = None,
    ) -> list[tuple[Hashable, float]]:
        """The best ``limit`` (key, score) pairs for the query terms, best first (score > 0).

        ``owners``: only documents of these owners. ``allow``: a boolean mask by document id
        (see ``mask``), for filters the caller computes (a time range). ``common_from``: above
        this many documents, terms in more than half of them are skipped (see the module docstring).
        """
        import numpy as np  # loaded on first use, not by `import session_graph`
        if not self._count or limit <= 0:
            return []
        n = len(self._keys)
        skip_from = self._count / 2 if common_from is not None and self._count > common_from else None
        average = self._total / self._count or 1.0
        scores = np.zeros(n, dtype=np.float64)
        hit: list[np.ndarray] = []
        for term in dict.fromkeys(query):
            df = self._df.get(term, 0)
            if df <= 0 or (skip_from is not None and df > skip_from):
                continue
            arrays = self._array(term)
            if arrays is None:
                continue
            docs, tf = arrays
            idf = math.log(1 + (self._count - df + 0.5) / (df + 0.5))
            norm = self.k1 * (1 - self.b + self.b * self._length_array[docs] / average)
            scores[docs] += idf * tf * (self.k1 + 1) / (tf + norm)
            hit.append(docs)
        if not hit:
            return []
        # rank only the documents the terms touched (far fewer than all, for a selective query)
        candidates = np.unique(np.concatenate(hit)) if sum(len(h) for h in hit) < n // 4 else np.arange(n)
        keep = self._alive_array[candidates]
        if owners is not None:
            codes = [self._owner_codes[o] for o in owners if o in self._owner_codes]
            keep = keep & np.isin(self._owner_array[candidates], np.asarray(codes, dtype=np.int64))  # type: ignore[operator]
        if allow is not None:
            keep = keep & allow[:n][candidates]
        candidates = candidates[keep & (scores[candidates] > 0)]
        if not len(candidates):
            return []
        values = scores[candidates]
        take = min(limit, len(candidates))
        if take < len(candidates):  # the best `take`, and every document tied with the last of them
            cut = np.partition(-values, take - 1)[take - 1]
            tied = candidates[-values <= cut]
            if len(tied) > take + 1000:  # a huge tie (one common word): the first `take` by id, in numpy
                top = np.argpartition(-values, take - 1)[:take]
                tied = candidates[top[np.lexsort((candidates[top], -values[top]))]]
            candidates = tied
        ranked = [(self._keys[d], float(scores[d])) for d in candidates]
        try:  # ties by key, so the order never depends on the order documents were added
            ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        except TypeError:
            ranked.sort(key=lambda pair: (-pair[1], repr(pair[0])))
        return ranked[:take]

    def mask(self, keep: Iterable[bool]) -> np.ndarray:
        """A boolean mask by document id (for ``search(allow=...)``) from one flag per id."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        return np.fromiter(keep, dtype=bool, count=len(self._keys))

    def doc_id(self, key: Hashable) -> int | None:
        """The id of an indexed document, or None."""
        return self._id_of.get(key)


class _Postings:
    """One term's postings: appended to Python lists (cheap), copied into numpy arrays grown in
    place when a query reads them (only the part added since the last read). The arrays and
    how far they are filled are published together, after the copy, so a reader never sees
    a slot not yet written."""

    __slots__ = ("docs", "state", "tfs")

    def __init__(self) -> None:
        import numpy as np  # loaded on first use, not by `import session_graph`
        self.docs: list[int] = []
        self.tfs: list[int] = []
        self.state: tuple[np.ndarray, np.ndarray, int] = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), 0)

    def append(self, doc: int, tf: int) -> None:
        self.docs.append(doc)
        self.tfs.append(tf)

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np  # loaded on first use, not by `import session_graph`
        doc_array, tf_array, synced = self.state
        n = len(self.docs)
        if synced < n:
            if n > len(doc_array):
                doc_array, tf_array = np.resize(doc_array, 2 * n), np.resize(tf_array, 2 * n)
            doc_array[synced:n] = self.docs[synced:n]
            tf_array[synced:n] = self.tfs[synced:n]
            self.state = (doc_array, tf_array, n)
        return doc_array[:n], tf_array[:n]
