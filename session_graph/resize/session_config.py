"""How a ``Session`` is configured: its settings (``set_settings``, ``configure``) and its plug
points (``set_policy_handler``, ``set_resize_handlers``, ``set_attachment_summary_handler``,
``set_memo_update_handler``, ``set_summary_handler``, ``override_node``).

Each is a function whose first parameter is the session, typed by ``ConfiguredSession`` (its
state, revision and ``Handlers``; nothing here imports the facade), and ``Session`` takes it as
its method by name (``configure = session_config.configure``): the docstring and signature live
here, once. What the handlers are and how they are checked is ``handlers.py``'s; the settings'
schema is ``settings.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

from session_graph.resize.handlers import Handlers, checked_callable
from session_graph.resize.policy import PolicyHandler
from session_graph.resize.state import (
    AttachmentSummaryHandler,
    MemoUpdateHandler,
    ResizeHandler,
    SessionState,
    SummaryHandler,
)
from session_graph.settings import SessionSettings

__all__ = [
    "ConfiguredSession",
    "configure",
    "override_node",
    "set_attachment_summary_handler",
    "set_memo_update_handler",
    "set_policy_handler",
    "set_resize_handlers",
    "set_settings",
    "set_summary_handler",
]


class ConfiguredSession(Protocol):
    """What configuring uses of a ``Session``: its state (settings), revision and ``Handlers``."""

    revision: int

    @property
    def state(self) -> SessionState: ...

    @property
    def handlers(self) -> Handlers: ...


SessionT = TypeVar("SessionT", bound=ConfiguredSession)


def set_settings(self: SessionT, key: str, value: Any) -> SessionT:
    """Replace the setting at a dotted key (``"session.limit"``, ``"session.mode"``...)."""
    self.state.settings.set(key, value)
    self.revision += 1
    return self


def configure(
    self: SessionT,
    *,
    mode: Literal["lite", "memo"] | None = None,
    limit: Mapping[str, int | None] | None = None,
    every_n_turns: int | None = None,
) -> SessionT:
    """Set mode, limit and cadence at once; nothing changes if any value is invalid."""
    staged = SessionSettings(self.state.settings.to_dict())
    if mode is not None:
        staged.set("session.mode", mode)
    if limit is not None:
        staged.set("session.limit", dict(limit))
    if every_n_turns is not None:
        staged.set("session.resize.every_n_turns", every_n_turns)
    self.state.settings = staged
    self.revision += 1
    return self


def set_policy_handler(self: SessionT, policy_handler: PolicyHandler | None) -> SessionT:
    """Replace the policy (None restores the default)."""
    self.handlers.policy = checked_callable(policy_handler, "policy handler")
    return self


def set_resize_handlers(self: SessionT, resize_type: str, resize_handler: ResizeHandler | None) -> SessionT:
    """Route ``resize_type`` to a handler (None removes it; lite/deep fall back to the defaults)."""
    self.handlers.set_resize(resize_type, resize_handler)
    return self


def set_attachment_summary_handler(self: SessionT, attachment_summary_handler: AttachmentSummaryHandler | None) -> SessionT:
    """Set how attachments are summarised for the memo, ``(message) -> list[dict]`` (None: the built-in summary)."""
    self.handlers.attachment_summary = checked_callable(attachment_summary_handler, "attachment summary handler")
    return self


def set_memo_update_handler(self: SessionT, memo_update_handler: MemoUpdateHandler | None) -> SessionT:
    """Set the memo update, ``(memo, messages, attachments, settings) -> dict`` (None: the model's, if any)."""
    self.handlers.memo_update = checked_callable(memo_update_handler, "memo update handler")
    return self


def set_summary_handler(self: SessionT, summary_handler: SummaryHandler | None) -> SessionT:
    """Replace the summary fold of summary mode: ``(summary, messages, settings) -> str``."""
    self.handlers.summary = checked_callable(summary_handler, "summary handler")
    return self


def override_node(self: SessionT, name: str, node: Callable[..., Any] | None) -> SessionT:
    """Replace one built-in node of the resize graph (None restores it)."""
    self.handlers.override(name, node)
    return self
