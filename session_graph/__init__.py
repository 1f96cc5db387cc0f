"""session_graph: keep an LLM agent's conversation inside its context budget."""

from session_graph.attachments import summarize_attachments
from session_graph.errors import (
    ConfigurationError,
    DocumentError,
    DocumentTypeError,
    HandlerResultError,
    MemoUpdateError,
    MessageError,
    PolicyResultError,
    SessionGraphError,
    SettingsError,
    UnknownResizeTypeError,
)
from session_graph.graph import NODE_NAMES, build_resize_graph
from session_graph.memo import ModelMemoUpdater
from session_graph.messages import to_message
from session_graph.policy import Decision, default_policy
from session_graph.resize_run import ResizeEvent
from session_graph.session import Session
from session_graph.settings import DEFAULT_MEMO_INSTRUCT, Limits, SessionSettings
from session_graph.sizing import message_chars
from session_graph.state import ResizeContext, SessionState
from session_graph.viz import GraphDrawing, draw
from session_graph.window import WindowTotals

__all__ = [
    "DEFAULT_MEMO_INSTRUCT",
    "NODE_NAMES",
    "ConfigurationError",
    "Decision",
    "DocumentError",
    "DocumentTypeError",
    "GraphDrawing",
    "HandlerResultError",
    "Limits",
    "MemoUpdateError",
    "MessageError",
    "ModelMemoUpdater",
    "PolicyResultError",
    "ResizeContext",
    "ResizeEvent",
    "Session",
    "SessionGraphError",
    "SessionSettings",
    "SessionState",
    "SettingsError",
    "UnknownResizeTypeError",
    "WindowTotals",
    "build_resize_graph",
    "default_policy",
    "draw",
    "message_chars",
    "summarize_attachments",
    "to_message",
]
