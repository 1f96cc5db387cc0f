"""One error tree for session_graph.

Every error the library raises on purpose derives from :class:`SessionGraphError` and,
where the spec names a builtin (``TypeError``, ``KeyError``), from that builtin too, so
``except KeyError`` keeps working for callers who wrote it against the reference.
Each message names the culprit and the fix.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DocumentError",
    "DocumentTypeError",
    "HandlerResultError",
    "InvalidKeyError",
    "MemoUpdateError",
    "MemoryReplyError",
    "MessageError",
    "MissingDependencyError",
    "ModelReplyError",
    "PolicyResultError",
    "SessionGraphError",
    "SettingsError",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "UnknownResizeTypeError",
]


class SessionGraphError(Exception):
    """Base of every error session_graph raises on purpose."""


class SettingsError(SessionGraphError, ValueError):
    """A setting key or value is not valid (unknown namespace, wrong type, bad mode)."""


class ConfigurationError(SessionGraphError, TypeError):
    """A handler, node override or resize type cannot be used as given (not callable, bad name)."""


class MessageError(SessionGraphError, ValueError):
    """A message given to the session cannot be turned into a langchain-core message."""


class PolicyResultError(SessionGraphError, TypeError):
    """A policy handler returned something other than None, a type name or a decision dict."""


class HandlerResultError(SessionGraphError, TypeError):
    """A resize, memo-update or attachment-summary handler returned the wrong shape."""


class UnknownResizeTypeError(SessionGraphError, KeyError):
    """The policy decided a resize type that has no route and no registered handler."""

    def __str__(self) -> str:  # KeyError would repr() the message; keep it readable
        return str(self.args[0]) if self.args else ""


class MemoUpdateError(SessionGraphError, RuntimeError):
    """Folding messages into the memo failed (model error, malformed reply, no model).

    The session keeps what the memo absorbed before the failure: ``memo_cursor`` points
    at the first message not yet folded, nothing past it left the window, and the next
    ``resize()`` resumes from there.

    Attributes:
        memo_cursor: index in ``full_chat_history`` of the first message not yet folded.
        pending: how many messages still wait to be folded.
    """

    def __init__(self, message: str, *, memo_cursor: int = 0, pending: int = 0) -> None:
        super().__init__(message)
        self.memo_cursor = memo_cursor
        self.pending = pending


class DocumentError(SessionGraphError, ValueError):
    """An exported JSON/YAML document is malformed or not a session document."""


class DocumentTypeError(DocumentError, TypeError):
    """An imported document is not a dict (a list, a string, a number...)."""


class StoreError(SessionGraphError, OSError):
    """A session store cannot be used: a path that is a file, no permission, an unreachable
    database, a document from a future schema version. Nothing was written."""


class StoreConflictError(StoreError):
    """Another writer saved the session since this one read it (``write(expect_version=...)``).

    Nothing was written. ``SessionManager.save`` handles it: it merges what the other writer
    stored with this session's changes and writes again.
    """

    def __init__(self, message: str, *, stored_version: int | None = None) -> None:
        super().__init__(message)
        self.stored_version = stored_version


class StoreUnavailableError(StoreError):
    """A store's database could not be reached, or its connection broke mid-operation.

    Retryable: nothing stored was lost, and what was under way can simply run again once the
    database is back (a commit's archive stays pending and the next ``commit()`` resumes it).
    ``retryable`` is True so generic retry code can tell it from a permanent ``StoreError``.
    """

    retryable = True


class InvalidKeyError(ConfigurationError, ValueError):
    """An identifier that becomes a store key or namespace (a session key, a tenant, a user or
    agent id) is empty, too long (``_base.ids.MAX_ID_LENGTH``), or would escape the store
    (``../``, absolute, NUL). A ``ConfigurationError`` and a ``ValueError``."""


class MissingDependencyError(SessionGraphError, ImportError):
    """An optional dependency is not installed (matplotlib for plots); the message says what to install."""


class MemoryReplyError(SessionGraphError, ValueError):
    """A commit model's reply could not be used (not JSON, wrong shape, an unknown category, a
    decision naming an id it was not shown or an op its category does not allow).

    The commit reports it in ``errors`` with status ``partial``; the archive stays pending and
    the next ``commit()`` asks again. Nothing is written from that reply.

    Attributes:
        step: the commit step whose reply failed (``summarize``, ``extract``, ``decide``).
    """

    def __init__(self, message: str, *, step: str = "") -> None:
        super().__init__(message)
        self.step = step


class ModelReplyError(SessionGraphError, ValueError):
    """A model's reply holds nothing of the shape its prompt asked for (no JSON object, one cut
    off at the output cap, several different ones, the wrong shape).

    The memo and summary folds report it inside their ``MemoUpdateError`` (so the resize trace
    records it), the commit inside its ``MemoryReplyError``; nothing is stored from that reply.

    Attributes:
        reason: a short, stable name of why (``truncated JSON object``, ``no JSON object``...).
    """

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message
