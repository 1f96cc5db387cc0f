"""terms() stems each ASCII word once (a bounded cache) and looks for a date form only where it
can occur: the terms are the same whether a word is new, cached, or the cache started over."""

from __future__ import annotations

from session_graph.retrieval import tokenize
from session_graph.retrieval.tokenize import terms


def test_cached_and_fresh_words_give_the_same_terms(monkeypatch) -> None:
    text = "The 007 agents moved on March 15, 2024 and 3/16/2024 (2024-03-17); cities Q x 我们的报告 café"
    first = terms(text)
    assert first == terms(text)  # every word cached now
    assert {"agent", "mov", "citi", "march", "2024", "d0315", "d0316", "d0317", "7", "café"} <= set(first)
    assert "the" not in first and "q" not in first and "x" not in first  # stop words and single letters
    monkeypatch.setattr(tokenize, "_KNOWN_MAX", 1)  # the cache starts over on every new word
    tokenize._KNOWN.clear()
    assert terms(text) == first and len(tokenize._KNOWN) <= 2
    assert terms("no digits, no months here") == ["digit", "month"]  # "here" is a stop word


def test_long_words_are_not_kept(monkeypatch) -> None:
    # a bounded count is not a bounded size: a tool result of long unbroken words (a sequence, a
    # hex dump, an encoded blob) would keep up to _KNOWN_MAX of them, each as long as it is
    monkeypatch.setattr(tokenize, "_KNOWN", {})
    words = ["acgt" * 2500 + f"{i:05d}" for i in range(200)]  # 200 distinct words of 10,005 characters
    found = terms(" ".join(words))
    assert found == [tokenize._ascii_term(w) for w in words] and len(found) == 200
    assert sum(len(k) + len(v) for k, v in tokenize._KNOWN.items()) < 50_000  # not the 4 MB of those words
    assert terms("running runs") == ["run", "run"] and "running" in tokenize._KNOWN  # short words still cached
