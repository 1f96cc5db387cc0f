"""session_graph: keep an LLM agent's conversation inside its context budget."""

import logging as _logging

from session_graph.accounting.attachments import summarize_attachments
from session_graph.errors import (
    ConfigurationError,
    DocumentError,
    DocumentTypeError,
    HandlerResultError,
    InvalidKeyError,
    MemoryReplyError,
    MemoUpdateError,
    MessageError,
    MissingDependencyError,
    PolicyResultError,
    SessionGraphError,
    SettingsError,
    StoreConflictError,
    StoreError,
    UnknownResizeTypeError,
)
from session_graph.resize.graph import NODE_NAMES, build_resize_graph
from session_graph.compression.memo import ModelMemoUpdater
from session_graph.messages import to_message
from session_graph.resize.policy import Decision, default_policy
from session_graph.resize.run import ResizeEvent
from session_graph.session import Session
from session_graph.settings import DEFAULT_MEMO_INSTRUCT, Limits, SessionSettings
from session_graph.accounting.sizing import message_chars
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.stores import (
    JsonlStore,
    PostgresStore,
    SearchHit,
    SessionInfo,
    SessionManager,
    SessionStats,
    SessionStore,
    Snapshot,
    SqliteStore,
    StoreBase,
    StoreChange,
    StoredSession,
    open_store,
)
from session_graph.stores.nanobot import NanobotKeyWarning
from session_graph.compression.summary import ModelSummarizer
from session_graph.accounting.tokens import (
    ApproxTokenCounter,
    CharCounter,
    CostRules,
    TiktokenCounter,
    TokenCounter,
    message_tokens,
)
from session_graph.resize.trace import ResizeTrace, TraceRecord
from session_graph.resize.view import SessionView
from session_graph.display.viz import GraphDrawing, draw
from session_graph.accounting.window import WindowTotals

__all__ = [
    "DEFAULT_MEMO_INSTRUCT",
    "NODE_NAMES",
    "ApproxTokenCounter",
    "CharCounter",
    "ConfigurationError",
    "CostRules",
    "Decision",
    "DocumentError",
    "DocumentTypeError",
    "GraphDrawing",
    "HandlerResultError",
    "InvalidKeyError",
    "JsonlStore",
    "Limits",
    "MemoUpdateError",
    "MemoryReplyError",
    "MessageError",
    "MissingDependencyError",
    "ModelMemoUpdater",
    "ModelSummarizer",
    "NanobotKeyWarning",
    "PolicyResultError",
    "PostgresStore",
    "ResizeContext",
    "ResizeEvent",
    "ResizeTrace",
    "SearchHit",
    "Session",
    "SessionGraphError",
    "SessionInfo",
    "SessionManager",
    "SessionSettings",
    "SessionState",
    "SessionStats",
    "SessionStore",
    "SessionView",
    "SettingsError",
    "Snapshot",
    "SqliteStore",
    "StoreBase",
    "StoreChange",
    "StoreConflictError",
    "StoreError",
    "StoredSession",
    "TiktokenCounter",
    "TokenCounter",
    "TraceRecord",
    "UnknownResizeTypeError",
    "WindowTotals",
    "build_resize_graph",
    "default_policy",
    "draw",
    "message_chars",
    "message_tokens",
    "open_store",
    "summarize_attachments",
    "to_message",
]

_logging.getLogger("session_graph").addHandler(_logging.NullHandler())  # a library logs; the application decides where
