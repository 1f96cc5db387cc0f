"""Edits made in place, seen by content: a session's memo (any depth), settings and metadata.

A user may write ``session.memo["x"] = ...`` or ``session.memo["facts"].append(...)``; nothing
runs at that moment. ``EditWatch`` notices such an edit when the session's revision is next read
(a save, a view): each watched value is held with its fingerprint (its JSON, or its ``repr`` when
it is not JSON), and a value that is another object, or the same object with other content, is a
change. Reading costs one encoding of the memo (and of the metadata when a store asks): about
100 us for a 100 KB memo, so a save reads it once (``session_append``, ``session_save``) and
every ``view()`` once; ``append_message`` never reads it.
Settings are replaced whole by every ``SessionSettings.set`` (its data dict is a new object), so
their identity is enough.
"""

from __future__ import annotations

import copy
import json
from typing import Any

try:  # the stores' optional fast encoder
    import orjson
except ImportError:  # pragma: no cover - orjson is optional
    orjson = None  # type: ignore[assignment]

__all__ = ["EditWatch", "detached", "fingerprint"]


def fingerprint(value: Any) -> bytes | str:
    """What ``value`` holds, as bytes to compare: its JSON (orjson when it can), else its ``repr``."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # a circular value, keys json refuses
        return repr(value)


def detached(value: Any) -> Any:
    """A deep copy of ``value`` sharing nothing with it (what a save remembers of a memo or
    metadata it wrote, so an edit in place after the save is still a change a merge keeps)."""
    if orjson is not None:
        try:
            copied = orjson.loads(orjson.dumps(value))
        except TypeError:
            pass
        else:
            if copied == value:  # no key or value the round trip changed (an int key, a tuple)
                return copied
    return copy.deepcopy(value)


class EditWatch:
    """The memo, settings data and metadata a session last showed, and their fingerprints."""

    __slots__ = ("memo", "memo_print", "metadata", "metadata_print", "settings")

    def __init__(self) -> None:
        self.memo: Any = None
        self.memo_print: bytes | str = b""
        self.settings: Any = None
        self.metadata: Any = None
        self.metadata_print: bytes | str = b""

    def mark(self, memo: Any, settings: Any) -> None:
        """Take ``memo`` and ``settings`` (the settings' data dict) as seen."""
        self.memo, self.memo_print, self.settings = memo, fingerprint(memo), settings

    def changed(self, memo: Any, settings: Any, metadata: Any = None, *, check_metadata: bool = False) -> bool:
        """Whether any of them changed since last seen (and take them as seen)."""
        changed = False
        if settings is not self.settings:
            self.settings, changed = settings, True
        memo_print = fingerprint(memo)
        if memo is not self.memo or memo_print != self.memo_print:
            self.memo, self.memo_print, changed = memo, memo_print, True
        if check_metadata:
            metadata_print = fingerprint(metadata)  # by content only: a load hands in an equal new dict
            if metadata_print != self.metadata_print:
                changed = changed or self.metadata is not None  # the first look is no change
                self.metadata, self.metadata_print = metadata, metadata_print
        return changed
