"""Size accounting: the spec's character approximation, computed once per message.

``message_chars(m) = len(role) + 1 + content length``, where a text part counts its text
and any other part counts its JSON length, except inline binary (base64), which counts
the length of its attachment summary instead of its bytes. Tool calls count the JSON of
their names and arguments: a tool-calling reply with empty text is not free for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from session_graph.accounting.attachments import is_inline_binary, summarize_part
from session_graph.messages import part_text, role_of

__all__ = ["Measures", "content_chars", "message_chars"]


_DUMPS = json.JSONEncoder(ensure_ascii=False, default=str).encode  # made once: ``json.dumps`` makes one per call for these options


def _json_len(value: Any) -> int:
    return len(_DUMPS(value))


def content_chars(content: str | list[Any]) -> int:
    """Characters of a message content under the spec's approximation."""
    if isinstance(content, str):
        return len(content)
    total = 0
    for part in content:
        if (text := part_text(part) if isinstance(part, str | dict) else None) is not None:
            total += len(text)
        elif is_inline_binary(part):
            total += _json_len(summarize_part(part))
        else:
            total += _json_len(part)
    return total


def message_chars(message: BaseMessage) -> int:
    """The approximate size of one message: ``len(role) + 1 + content`` (+ tool calls)."""
    content = message.content
    size = len(role_of(message)) + 1 + (len(content) if type(content) is str else content_chars(content))
    calls = message.__dict__.get("tool_calls")  # read first: isinstance on a message class is an ABC check, slow
    if calls and isinstance(message, AIMessage):
        size += _json_len([{"name": c["name"], "args": c["args"]} for c in calls])
    return size


_MESSAGE_CHARS = message_chars  # the built-in measure, which ``Measures.add`` may sum inline


class Measures:
    """Each message's chars and tokens, computed once, in one record by id (the ledger's cache).

    An entry is ``(message, chars, tokens, position)``: an appended message costs one dict write
    for both measures and where it was appended (``add``; the ledger reads that position back
    instead of indexing the message apart, and trusts it only while the history holds a message
    with that id there). A cached value is reused only for the very object it was measured
    from, so a handler that returns an edited copy under the same id is measured afresh (the
    position stays: it is the id's). Without a token measure a message's tokens are its chars.
    A measure or position not taken yet is -1 in the entry (a message read for its chars only
    is not encoded).
    """

    __slots__ = ("_chars", "_tokens", "counting", "entries")

    def __init__(self, tokens: Callable[[BaseMessage], int] | None = None,
                 chars: Callable[[BaseMessage], int] | None = None) -> None:
        self._chars = chars or message_chars
        self._tokens = tokens
        self.counting = tokens is not None  # whether tokens are counted apart from chars
        self.entries: dict[str, tuple[BaseMessage, int, int, int]] = {}  # by id (read them, do not write them)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a session's ``pickle``, ``deepcopy``) with ``token_measure``'s recipe for its closure, made again when loaded."""
        remake = getattr(self._tokens, "remake", None)
        return {"_chars": self._chars, "_tokens": None if remake else self._tokens, "remake": remake, "counting": self.counting,
                "entries": self.entries}

    def __setstate__(self, values: dict[str, Any]) -> None:
        self._chars, self.counting, self.entries = values["_chars"], values["counting"], values["entries"]
        self._tokens = values["remake"]() if values["remake"] is not None else values["_tokens"]

    def add(self, message: BaseMessage, role: str | None = None, position: int = -1) -> tuple[int, int]:
        """Chars and tokens of a message the caller knows is new (just appended): no lookup first.

        ``role``: its ``role_of``, when the caller has it: a text message without tool calls is
        then sized here with the built-in measure (``message_chars``' sum, one call less).
        ``position``: where it was appended in the full history, kept in its entry.
        """
        content = message.content
        if role is not None and type(content) is str and self._chars is _MESSAGE_CHARS and not message.__dict__.get("tool_calls"):
            chars = len(role) + 1 + len(content)
        else:
            chars = self._chars(message)
        tokens = self._tokens(message) if self._tokens is not None else chars
        key = message.id
        if key:
            self.entries[key] = (message, chars, tokens, position)
        return chars, tokens

    def chars(self, message: BaseMessage) -> int:
        """Characters of a message (the spec's approximation), cached."""
        key = message.id or ""
        entry = self.entries.get(key)
        if entry is not None and entry[0] is message and entry[1] >= 0:
            return entry[1]
        chars = self._chars(message)
        if key:
            self.entries[key] = (message, chars, entry[2] if entry is not None and entry[0] is message else -1,
                                  entry[3] if entry is not None else -1)
        return chars

    def tokens(self, message: BaseMessage) -> int:
        """Tokens of a message with the token measure (its chars without one), cached."""
        if self._tokens is None:
            return self.chars(message)
        key = message.id or ""
        entry = self.entries.get(key)
        if entry is not None and entry[0] is message and entry[2] >= 0:
            return entry[2]
        tokens = self._tokens(message)
        if key:
            self.entries[key] = (message, entry[1] if entry is not None and entry[0] is message else -1, tokens,
                                  entry[3] if entry is not None else -1)
        return tokens

    def sums(self, messages: Iterable[BaseMessage]) -> tuple[int, int]:
        """The chars and tokens (0 when not ``counting``) of ``messages`` (a prune's dropped ones):
        each read from its one entry (the walk measured it), else measured as ``chars``/``tokens`` do."""
        entries, chars, tokens, counting = self.entries, 0, 0, self.counting
        for message in messages:
            entry = entries.get(message.id or "")
            if entry is not None and entry[0] is message and entry[1] >= 0 and entry[2] >= 0:
                chars += entry[1]
                tokens += entry[2]
            else:
                chars += self.chars(message)
                tokens += self.tokens(message) if counting else 0
        return chars, tokens if counting else 0

    def uncached_chars(self, message: BaseMessage) -> int:
        """Chars of a message that is not in the history (a view's merged message): nothing cached under its id."""
        return self._chars(message)

    def uncached_tokens(self, message: BaseMessage) -> int:
        """Tokens of a message that is not in the history, cached nowhere."""
        return self._tokens(message) if self._tokens is not None else self._chars(message)

    def position(self, message_id: str) -> int:
        """Where the message with this id was appended (-1: not recorded); the caller checks it still is."""
        entry = self.entries.get(message_id)
        return entry[3] if entry is not None else -1

    def __len__(self) -> int:
        return len(self.entries)
