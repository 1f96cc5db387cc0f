"""Long-term memory: parts, categories, the memory store, the prefilter and the apply step.

``MemoryConfig`` says where memories live and whose they are; ``Session(..., memory=...)``
and ``SessionManager(..., memory=...)`` use it for ``commit()``. Message parts
(``TextPart``, ``ContextPart``, ``ToolPart``) map OpenViking's message model onto
langchain-core messages.
"""

from typing import Any

from session_graph.memory.categories import CATEGORIES, content_hash, memory_namespace, memory_uri, slug
from session_graph.memory.config import MemoryConfig
from session_graph.memory.parts import ContextPart, TextPart, ToolPart

__all__ = [
    "CATEGORIES",
    "ContextPart",
    "FileMemoryStore",
    "MemoryConfig",
    "TextPart",
    "ToolPart",
    "content_hash",
    "memory_namespace",
    "memory_uri",
    "slug",
]


def __getattr__(name: str) -> Any:
    if name == "FileMemoryStore":  # imported on use: it builds on the stores package, which imports sessions
        from session_graph.memory.filestore import FileMemoryStore

        return FileMemoryStore
    raise AttributeError(f"module 'session_graph.memory' has no attribute {name!r}")
