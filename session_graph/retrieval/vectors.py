"""Keyed vectors kept in place and searched without scanning them all: ``VectorIndex``.

``DenseIndex`` (``dense.py``) is handed the documents to rank on every query; a corpus that
changes a few items at a time (long-term memories, kept current by a change feed) wants the
opposite: vectors stored once per key in one preallocated matrix, a changed item's row
overwritten (or freed and reused), nothing rebuilt, and a query that does not read every row.

- ``set(key, text, tag)`` records a key's text (``tag``: its version, a content hash; the same
  tag again is a no-op); it is embedded at the next search, in batches, with the others
  pending. ``remove(key)`` frees its row.
- Up to ``exact_up_to`` live vectors a query is one matrix-vector product over the rows in use
  (exact). Above, an inverted file (IVF, as FAISS's ``IndexIVFFlat``): the vectors are
  clustered by k-means into about sqrt(n) lists, a query scores the centroids and then only
  the members of its ``probes`` nearest lists, so it reads O(sqrt n) rows, not n. Each list
  keeps its vectors in one contiguous float32 block (the probed blocks are joined and scored in
  one product: no gather of scattered rows). When a few directions hold nearly all the vectors'
  energy (``KEPT_ENERGY``), the lists hold the vectors projected on them (fewer floats read per
  row) and a query's best ``SHORTLIST`` by projection are re-ranked by their whole vectors, so
  the scores returned are exact cosines. New vectors join their nearest list at once; the lists
  (and the projection) are trained again, deterministically, when the live count has doubled
  since the last training, so training is amortised O(1) per vector; a removed vector leaves
  its list at once (the list's last member takes its place).
  The result is approximate above ``exact_up_to``: ``bench/bench_memory.py --scaling`` prints
  its recall against the exact ranking (24 probes of 100 lists at 10,000 vectors: 0.96 of the
  exact top 20, at a cost per query within 1.2x of an exact search of 100 vectors).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
import math
import threading
from typing import TYPE_CHECKING, Any

from session_graph._base.lazy import lazy_module
from session_graph.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
else:  # imported by the first index that is used: `import session_graph` loads no numpy
    np = lazy_module("numpy")

__all__ = ["MAX_CHARS", "VectorIndex", "normalised", "row_scores"]

MAX_CHARS = 2000
"""The most characters of a text that are embedded."""
LISTS_PER_ROOT = 1.0
"""Inverted lists per square root of the live vectors (100 at 10,000)."""
PROBES = 24
"""Lists a large search reads (24 of 100 at 10,000: recall@20 ~0.96 against exact, ``--scaling``)."""
TRAIN_PER_LIST = 100
"""At most this many vectors per list move the centroids in training (FAISS's bound is 39-256)."""
KEPT_ENERGY = 0.98
"""The share of the vectors' energy (sum of squared singular values) the lists' projection keeps."""
SHORTLIST = 64
"""At least this many of a large search's best by projection are re-ranked by their whole vectors."""


class VectorIndex:
    """Unit vectors by key, updated in place, searched by cosine (exact, or IVF when large).

    Args:
        embeddings: a LangChain ``Embeddings``.
        batch: texts per ``embed_documents`` call.
        exact_up_to: up to this many live vectors a search is exact.
        probes: how many inverted lists a large search reads.
    """

    def __init__(self, embeddings: Any, *, batch: int = 64, exact_up_to: int = 2048, probes: int = PROBES,
                 lists_per_root: float = LISTS_PER_ROOT) -> None:
        if not (callable(getattr(embeddings, "embed_documents", None)) and callable(getattr(embeddings, "embed_query", None))):
            raise ConfigurationError(f"{embeddings!r:.60} is not a LangChain Embeddings (it needs embed_documents and embed_query).")
        self.embeddings, self.batch, self.exact_up_to, self.probes = embeddings, batch, exact_up_to, probes
        self.lists_per_root = lists_per_root
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._used = 0  # rows ever handed out (the matrix's capacity may be larger)
        self._row: dict[Hashable, int] = {}
        self._tag: dict[Hashable, Any] = {}
        self._key_of: list[Hashable] = []
        self._free: list[int] = []
        self._pending: dict[Hashable, tuple[Any, str]] = {}
        self._centroids: np.ndarray | None = None
        self._list_of = np.zeros(0, dtype=np.int32)  # each row's inverted list (-1: none)
        self._slot = np.zeros(0, dtype=np.int64)  # each row's place in its list
        self._lists: list[np.ndarray] = []  # the rows of each list, first ``_sizes[i]`` used
        self._blocks: list[np.ndarray] = []  # each list's projected vectors, contiguous, in the order of ``_lists``
        self._projection: np.ndarray | None = None  # r x width (None: the whole vectors)
        self._sizes: list[int] = []
        self._trained_at = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._row) + len(self._pending)

    def __contains__(self, key: object) -> bool:
        return key in self._row or key in self._pending

    def holds(self, key: Hashable, tag: Any) -> bool:
        """Whether ``key`` is held with this ``tag`` (embedded or pending)."""
        return (key in self._row or key in self._pending) and self._tag.get(key) == tag

    def keys(self) -> set[Hashable]:
        """The keys held (embedded or pending)."""
        return {*self._row, *self._pending}

    def set(self, key: Hashable, text: str, tag: Any = None) -> None:
        """Record ``key``'s text (embedded at the next search); the same ``tag`` again changes nothing."""
        with self._lock:
            if tag is not None and self._tag.get(key) == tag and (key in self._row or key in self._pending):
                return
            self._drop(key)
            self._tag[key] = tag
            self._pending[key] = (tag, text)

    def remove(self, key: Hashable) -> None:
        """Forget ``key`` (no-op if absent)."""
        with self._lock:
            self._drop(key)
            self._tag.pop(key, None)

    def _drop(self, key: Hashable) -> None:
        self._pending.pop(key, None)
        row = self._row.pop(key, None)
        if row is not None:
            self._alive[row] = False
            self._free.append(row)
            if self._centroids is not None and self._list_of[row] >= 0:
                self._leave(row)

    def _flush(self) -> None:
        """Embed what is pending, in batches, into free rows or new ones (capacity doubling)."""
        pending = list(self._pending.items())
        for start in range(0, len(pending), self.batch):
            chunk = pending[start : start + self.batch]
            block = normalised(self.embeddings.embed_documents([text[:MAX_CHARS] or " " for _, (_, text) in chunk]),
                                len(chunk), self.embeddings)
            if self._matrix.size and block.shape[1] != self._matrix.shape[1]:
                raise ConfigurationError(f"{self.embeddings!r:.60} returned vectors of another size ({block.shape[1]}, "
                                         f"before {self._matrix.shape[1]}); use one model per VectorIndex.")
            for (key, _), vector in zip(chunk, block, strict=True):
                row = self._free.pop() if self._free else self._new_row(block.shape[1])
                self._matrix[row] = vector
                self._alive[row] = True
                self._row[key] = row
                self._key_of[row] = key
                if self._centroids is not None:
                    self._join(row)
                del self._pending[key]

    def _new_row(self, width: int) -> int:
        if self._used == len(self._matrix) or not self._matrix.size:
            capacity = max(64, 2 * len(self._matrix))
            grown = np.zeros((capacity, width), dtype=np.float32)
            if self._used:
                grown[: self._used] = self._matrix[: self._used]
            alive = np.zeros(capacity, dtype=bool)
            alive[: self._used] = self._alive[: self._used]
            lists = np.full(capacity, -1, dtype=np.int32)
            lists[: self._used] = self._list_of[: self._used]
            slots = np.zeros(capacity, dtype=np.int64)
            slots[: self._used] = self._slot[: self._used]
            self._matrix, self._alive, self._list_of, self._slot = grown, alive, lists, slots
        self._key_of.append(None)
        self._used += 1
        return self._used - 1

    def _join(self, row: int) -> None:
        """Put a row in its nearest list (O(1) amortised: the list's arrays grow by doubling)."""
        assert self._centroids is not None
        projected = self._project(self._matrix[row])
        target = int(np.argmax(row_scores(self._centroids, projected)))
        members, block, size = self._lists[target], self._blocks[target], self._sizes[target]
        if size == len(members):
            grow = max(8, size)
            members = self._lists[target] = np.concatenate([members, np.zeros(grow, dtype=np.int64)])
            block = self._blocks[target] = np.concatenate([block, np.zeros((grow, block.shape[1]), dtype=np.float32)])
        members[size], block[size] = row, projected
        self._list_of[row], self._slot[row], self._sizes[target] = target, size, size + 1

    def _leave(self, row: int) -> None:
        """Take a row out of its list (the list's last member moves into its place)."""
        target, slot = int(self._list_of[row]), int(self._slot[row])
        members, block, last = self._lists[target], self._blocks[target], self._sizes[target] - 1
        moved = int(members[last])
        members[slot], block[slot], self._slot[moved] = moved, block[last], slot
        self._sizes[target] = last
        self._list_of[row] = -1

    def _project(self, vectors: np.ndarray) -> np.ndarray:
        if self._projection is None:
            return vectors
        return row_scores(self._projection, vectors) if vectors.ndim == 1 else vectors @ self._projection.T

    def _train(self) -> None:
        """Lists of projected vectors. The projection: the top right singular vectors of a sample (the
        eigenvectors of its Gram matrix, width x width: cheap)
        that keep ``KEPT_ENERGY`` of its energy (none when that is most of the width), so a probe
        reads fewer floats per vector; a search re-ranks its best by the whole vectors. Then
        k-means into ``lists_per_root * sqrt(n)`` lists (deterministic: evenly spaced rows start
        it, at most ``TRAIN_PER_LIST`` rows per list, evenly spaced, move the centroids, a few
        rounds); every live row joins its nearest list, each list's vectors one contiguous block."""
        rows = np.flatnonzero(self._alive[: self._used])
        count = max(1, min(len(rows), int(self.lists_per_root * math.sqrt(len(rows)))))
        sample = self._matrix[rows[np.linspace(0, len(rows) - 1, min(len(rows), count * TRAIN_PER_LIST)).astype(np.int64)]]
        gram = sample.astype(np.float64).T @ sample  # width x width: its eigenvectors are the sample's singular vectors
        power, basis = np.linalg.eigh(gram)  # ascending
        energy = np.cumsum(np.clip(power[::-1], 0.0, None))
        keep = int(np.searchsorted(energy, KEPT_ENERGY * energy[-1]) + 1)
        keep = min(self._matrix.shape[1], -(-keep // 8) * 8)
        wide = keep > 0.75 * self._matrix.shape[1]
        self._projection = None if wide else np.ascontiguousarray(basis[:, ::-1][:, :keep].T, dtype=np.float32)
        sample = self._project(sample)
        centroids = sample[np.linspace(0, len(sample) - 1, count).astype(np.int64)].copy()
        for _ in range(6):
            assign = np.argmax(sample @ centroids.T, axis=1)
            sums = np.zeros_like(centroids)
            np.add.at(sums, assign, sample)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            centroids = np.where(norms > 0, sums / np.where(norms == 0, 1.0, norms), centroids)
        projected = np.ascontiguousarray(self._project(self._matrix[rows]), dtype=np.float32)
        assign = np.argmax(projected @ centroids.T, axis=1)
        self._centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self._list_of[: self._used] = -1
        self._lists, self._blocks, self._sizes = [], [], []
        for target in range(count):
            chosen = assign == target
            members = rows[chosen]
            self._lists.append(members)
            self._blocks.append(projected[chosen])  # a copy, contiguous
            self._sizes.append(len(members))
            self._list_of[members] = target
            self._slot[members] = np.arange(len(members))
        self._trained_at = len(rows)

    def search(self, query: str, limit: int, among: Iterable[Hashable] | None = None) -> list[tuple[Hashable, float]]:
        """The best ``limit`` keys by cosine similarity to ``query`` (score > 0), best first;
        ``among``: only these keys (exact over their rows)."""
        with self._lock:
            if self._pending:
                self._flush()
            live = len(self._row)
            if not live or limit <= 0:
                return []
            rows = None if among is None else np.fromiter((self._row[k] for k in among if k in self._row), dtype=np.int64)
            if rows is not None and not len(rows):
                return []
            vector = normalised([self.embeddings.embed_query(query)], 1, self.embeddings)[0]
            if len(vector) != self._matrix.shape[1]:
                raise ConfigurationError(f"{self.embeddings!r:.60} returned a query vector of another size ({len(vector)}, "
                                         f"the index holds {self._matrix.shape[1]}); use one model per VectorIndex.")
            if rows is not None:
                scores = row_scores(self._matrix[rows], vector)
            elif live <= self.exact_up_to:
                rows = np.arange(self._used)
                scores = row_scores(self._matrix[: self._used], vector)
                scores[~self._alive[: self._used]] = -np.inf
            else:
                if self._centroids is None or live >= 2 * self._trained_at:
                    self._train()
                assert self._centroids is not None
                projected = self._project(vector)
                closeness = row_scores(self._centroids, projected)
                probes = min(self.probes, len(closeness))
                near = np.argpartition(-closeness, probes - 1)[:probes].tolist()
                # the probed lists' contiguous blocks joined (a copy of whole blocks, no gather of
                # rows) and scored in one product; the best by projection re-ranked by their whole vectors
                rows = np.concatenate([self._lists[t][: self._sizes[t]] for t in near])
                scores = row_scores(np.concatenate([self._blocks[t][: self._sizes[t]] for t in near]), projected)
                if self._projection is not None:
                    shortlist = max(SHORTLIST, 3 * limit)
                    if len(rows) > shortlist:
                        rows = rows[np.argpartition(-scores, shortlist - 1)[:shortlist]]
                    scores = row_scores(self._matrix[rows], vector)
            take = min(limit, len(scores))
            if take <= 0:
                return []
            top = np.argpartition(-scores, take - 1)[:take]
            top = top[np.argsort(-scores[top], kind="stable")]
            # float32 rounding puts a unit vector's cosine with itself a little above 1: a cosine is at most 1
            return [(self._key_of[int(rows[i])], min(1.0, float(scores[i]))) for i in top if scores[i] > 0]


def row_scores(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector``, on one thread: a multi-threaded BLAS spreads a matrix-vector product
    of a few thousand rows over threads that then spin, costing ~40x the CPU on a busy machine
    (measured: 8 ms against 0.2 ms per query at 2,000 vectors). OpenBLAS keeps a product below
    ``SMALL_PRODUCT`` elements on the calling thread, where it is ~2x faster than numpy's own
    loop (``einsum``); above, ``einsum``, which never starts threads."""
    if matrix.size < SMALL_PRODUCT:
        return matrix @ vector
    return np.einsum("ij,j->i", matrix, vector)


SMALL_PRODUCT = 9216
"""OpenBLAS's own bound: a ``gemv`` of fewer elements (2304 x its ``GEMM_MULTITHREAD_THRESHOLD``, 4)
runs on one thread."""


def normalised(vectors: Any, count: int, model: Any) -> np.ndarray:
    """``vectors`` as a float32 matrix of unit rows (checked: ``count`` rows of one width; a row with a
    NaN or an infinity is a zero row: it scores 0, so it is never found and never breaks a search)."""
    try:
        block = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{model!r:.60} returned something that is not a list of vectors: {error}") from None
    if block.ndim != 2 or block.shape[0] != count:
        raise ConfigurationError(f"{model!r:.60} returned {block.shape[0] if block.ndim else 0} vectors for {count} texts.")
    broken = ~np.isfinite(block).all(axis=1)  # a NaN or an inf (a broken model): a zero row, which matches nothing
    if broken.any():
        block = np.where(broken[:, None], np.float32(0.0), block)
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return block / np.where(norms == 0, 1.0, norms)
