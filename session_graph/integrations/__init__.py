"""Putting a session in front of LangChain and LangGraph agents."""

from session_graph.integrations.binding import BindingOptions, SessionBinding
from session_graph.integrations.glue import SessionAgent, attach_session, detach_session, get_session
from session_graph.integrations.history_recall import HistoryRecall, history_tools
from session_graph.integrations.middleware import SessionMiddleware
from session_graph.integrations.node import session_model_hooks, session_node, session_pre_model_hook

__all__ = [
    "BindingOptions",
    "HistoryRecall",
    "SessionAgent",
    "SessionBinding",
    "SessionMiddleware",
    "attach_session",
    "detach_session",
    "get_session",
    "history_tools",
    "session_model_hooks",
    "session_node",
    "session_pre_model_hook",
]
