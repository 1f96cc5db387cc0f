"""Long-term memory: parts, categories, the memory store, the prefilter and the apply step.

``MemoryConfig`` says where memories live and whose they are; ``Session(..., memory=...)``
and ``SessionManager(..., memory=...)`` use it for ``commit()``. Message parts
(``TextPart``, ``ContextPart``, ``ToolPart``) map OpenViking's message model onto
langchain-core messages. ``list_memories``, ``memory_history``, ``forget``, ``expire`` and
``export_memories`` are what a user does with their memories; ``migrate_to_tenant`` moves a
user's memories written before tenancy under a tenant (the operator's explicit upgrade step).
"""

from session_graph.memory.categories import CATEGORIES, content_hash, memory_namespace, memory_uri, slug
from session_graph.memory.config import MemoryConfig
from session_graph.memory.filestore import FileMemoryStore
from session_graph.memory.manage import expire, export_memories, forget, list_memories, memory_history
from session_graph.memory.migrate import migrate_to_tenant
from session_graph.memory.parts import ContextPart, TextPart, ToolPart

__all__ = [
    "CATEGORIES",
    "ContextPart",
    "FileMemoryStore",
    "MemoryConfig",
    "TextPart",
    "ToolPart",
    "content_hash",
    "expire",
    "export_memories",
    "forget",
    "list_memories",
    "memory_history",
    "memory_namespace",
    "memory_uri",
    "migrate_to_tenant",
    "slug",
]
