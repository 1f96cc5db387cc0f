"""SessionSettings: defaults, dotted keys, validation and the precedence rules.

Settings live in one nested dict under the ``session`` namespace and are read and written
by dotted key (``"session.resize.every_n_turns"``). ``set`` replaces the value at a key
(lists and dicts are never merged). What the policy and the nodes use is the frozen
:class:`Limits`, resolved with the precedence rules:

- ``session.limit.{chars,messages}`` (when set and not None) win over ``session.resize.*``;
- ``session.limit.tokens`` replaces the char limit, unless ``session.limit.chars`` is set too;
- an explicit ``session.memo.enabled`` wins over what ``session.mode`` implies;
- a limit of 0 or None disables its check;
- ``session.resize.prune_to_ratio`` cuts the window to that share of the char limit, so a
  full window is not resized again on the next turn; unset, it is 1.0 in lite mode (the
  reference behaviour) and 0.8 in memo and summary modes (a fold per turn would be costly);
- a summary/memo reserve larger than half the token budget is held to half of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import copy
from dataclasses import dataclass
from typing import Any
import warnings

from session_graph.errors import SettingsError

__all__ = ["DEFAULT_MEMO_INSTRUCT", "Limits", "SessionSettings"]

DEFAULT_MEMO_INSTRUCT = (
    "Update the memo dictionary based on the provided messages.",
    "Keep stable preferences, constraints, and facts that help future turns.",
    "Add new keys or update existing ones as needed.",
    "Return the updated memo dictionary.",
)

_LEGACY = {
    "session.resize.max_current_chars": "session.resize.max_messages_text_length (or session.limit.chars)",
    "session.resize.keep_last_messages": "session.resize.max_keep_messages_count (or session.limit.messages)",
}
_UNSET = object()


@dataclass(frozen=True, slots=True)
class Limits:
    """The settings the policy and the nodes act on, after precedence.

    Attributes:
        chars: window size limit in approximate characters; 0 disables.
        messages: window message-count limit; 0 disables.
        every_n_turns: resize every N assistant turns; 0 disables.
        mode: ``"lite"`` or ``"memo"``.
        memo_enabled: whether resizes fold messages into the memo.
        instruct: the memo-update instructions.
        prune_chars: the size a prune cuts the window to (``chars`` x ``prune_to_ratio``).
        tokens: the token budget of what is sent to the model; 0 disables.
        prune_tokens: the token budget a prune cuts to (``tokens`` x ``session.tokens.prune_to_ratio``,
            0.8 by default: the headroom spares a resize, or a summary call, on every turn).
        counter: which token counter: ``(encoding, model, approximate)``, or None for chars.
        per_message: tokens each message adds (OpenAI: 3).
        per_name: tokens a ``name`` adds (OpenAI: 1).
        reply_priming: tokens each request adds (OpenAI: 3).
        summary_enabled: whether messages leaving the window are folded into a summary.
        reserve_tokens: the most the summary or memo message may take in the view (what it
            really takes is all it holds back from the window); at most half the token budget.
        summary_prompt: a replacement for the summary fold prompt, or None.
        chunk_tokens: the most a memo or summary fold sends in one model call, in tokens
            (under a char limit: four chars a token).
        fold_min_ratio: a lite resize folds into the memo only when what waits to be folded
            is at least this share of the window's limit (a prune that needs it always folds).
    """

    chars: int
    messages: int
    every_n_turns: int
    mode: str
    memo_enabled: bool
    instruct: tuple[str, ...]
    prune_chars: int = 0
    tokens: int = 0
    prune_tokens: int = 0
    counter: tuple[str | None, str | None, bool] | None = None
    per_message: int = 3
    per_name: int = 1
    reply_priming: int = 3
    summary_enabled: bool = False
    reserve_tokens: int = 512
    summary_prompt: str | None = None
    chunk_tokens: int = 2000
    fold_min_ratio: float = 0.25


def _opt_ratio(key: str, value: Any) -> None:
    if value is not None:
        _ratio(key, value)


def _positive(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingsError(f"{key} must be a whole number > 0, got {value!r}.")


def _ratio(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise SettingsError(f"{key} must be a number in (0, 1], the share of the limit a prune keeps; got {value!r}.")


def _opt_count(key: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise SettingsError(f"{key} must be a whole number >= 0 or None (0/None disables), got {value!r}.")


def _opt_bool(key: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise SettingsError(f"{key} must be True, False or None (None: follow session.mode), got {value!r}.")


def _mode(key: str, value: Any) -> None:
    if value not in ("lite", "memo", "summary"):
        raise SettingsError(f"{key} must be 'lite', 'memo' or 'summary', got {value!r}.")


def _opt_str(key: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise SettingsError(f"{key} must be a non-empty string or None, got {value!r}.")


def _count(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(f"{key} must be a whole number >= 0, got {value!r}.")


def _instruct(key: str, value: Any) -> None:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{key} must be a list of instruction strings, got {value!r}.")


def _token_budget(key: str, value: Any) -> None:
    _opt_count(key, value)
    if value and value < 32:
        raise SettingsError(f"{key} must be 0/None (no budget) or at least 32 tokens, got {value!r}.")


def _limit(key: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a dict like {{'chars': 4000, 'messages': 40}} or None, got {value!r}.")
    unknown = set(value) - {"chars", "messages", "tokens"}
    if unknown:
        raise SettingsError(f"{key} takes only 'chars', 'messages' and 'tokens', got {sorted(unknown)}.")
    for name, item in value.items():
        (_token_budget if name == "tokens" else _opt_count)(f"{key}.{name}", item)


_VALIDATORS: dict[str, Callable[[str, Any], None]] = {
    "session.mode": _mode,
    "session.resize.every_n_turns": _opt_count,
    "session.resize.max_messages_text_length": _opt_count,
    "session.resize.max_keep_messages_count": _opt_count,
    "session.resize.prune_to_ratio": _opt_ratio,
    "session.memo.enabled": _opt_bool,
    "session.memo.instruct": _instruct,
    "session.memo.chunk_tokens": _positive,
    "session.memo.fold_min_ratio": _ratio,
    "session.limit": _limit,
    "session.limit.chars": _opt_count,
    "session.limit.messages": _opt_count,
    "session.limit.tokens": _token_budget,
    "session.tokens.encoding": _opt_str,
    "session.tokens.model": _opt_str,
    "session.tokens.approximate": _opt_bool,
    "session.tokens.per_message": _count,
    "session.tokens.per_name": _count,
    "session.tokens.reply_priming": _count,
    "session.tokens.prune_to_ratio": _ratio,
    "session.summary.reserve_tokens": _count,
    "session.summary.prompt": _opt_str,
}
# Keys the spec documents as "unset" by default: reading them gives None, not KeyError.
_KNOWN_UNSET = (
    "session.memo.enabled",
    "session.limit",
    "session.limit.chars",
    "session.limit.messages",
    "session.limit.tokens",
    "session.tokens.encoding",
    "session.tokens.model",
    "session.tokens.approximate",
    "session.summary.prompt",
    "session.resize.prune_to_ratio",
)


def _defaults() -> dict[str, Any]:
    return {
        "session": {
            "mode": "lite",
            "resize": {
                "every_n_turns": 8,
                "max_messages_text_length": 12_000,
                "max_keep_messages_count": None,
                "prune_to_ratio": None,
            },
            "memo": {"instruct": list(DEFAULT_MEMO_INSTRUCT), "chunk_tokens": 2000, "fold_min_ratio": 0.25},
            "tokens": {"per_message": 3, "per_name": 1, "reply_priming": 3, "prune_to_ratio": 0.8},
            "summary": {"reserve_tokens": 512},
        }
    }


class SessionSettings:
    """The session's own settings (only the ``session.*`` namespace, never credentials).

    Example:
        >>> settings = SessionSettings()
        >>> settings["session.resize.every_n_turns"]
        8
        >>> settings.set("session.limit", {"chars": 4000}).resolved().chars
        4000
    """

    __slots__ = ("_data", "_resolved")

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = _defaults()
        self._resolved: Limits | None = None
        for key, value in _flatten(values or {}):
            self.set(key, value)

    # -- dotted access ---------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _UNSET)
        if value is _UNSET:
            raise KeyError(f"no setting {key!r}; set it with session.set_settings({key!r}, value)")
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _UNSET) is not _UNSET

    def get(self, key: str, default: Any = None) -> Any:
        """The value at a dotted key (a copy for dicts and lists), or ``default``."""
        value = _lookup(self._data, key)
        if value is _UNSET:
            return None if key in _KNOWN_UNSET and default is _UNSET else default
        return copy.deepcopy(value)

    def set(self, key: str, value: Any) -> SessionSettings:
        """Replace the value at a dotted key (lists and dicts are replaced, never merged).

        Raises:
            SettingsError: the key is outside ``session.*`` or the value has the wrong type.
        """
        if not isinstance(key, str) or not (key == "session" or key.startswith("session.")):
            raise SettingsError(
                f"setting key {key!r} is outside the 'session.' namespace; session settings hold "
                "only session.* keys (credentials and model settings belong to the model object)."
            )
        parts = key.split(".")
        if any(not part for part in parts):
            raise SettingsError(f"setting key {key!r} has an empty part.")
        if key == "session" and not isinstance(value, Mapping):
            raise SettingsError("'session' must be a dict of settings.")
        for full_key, item in _flatten(value, key) if isinstance(value, Mapping) else [(key, value)]:
            if full_key in _VALIDATORS:
                _VALIDATORS[full_key](full_key, item)
            if full_key in _LEGACY:
                warnings.warn(
                    f"{full_key} is a legacy key and is not honoured; use {_LEGACY[full_key]}.",
                    DeprecationWarning,
                    stacklevel=3,
                )
        if key in _VALIDATORS:
            _VALIDATORS[key](key, value)
        node = self._data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
        self._resolved = None
        return self

    def _get_or_default(self, key: str) -> Any:
        value = self.get(key, _UNSET)
        if value is _UNSET:  # a replaced subtree may lack a key: fall back to its default
            value = _lookup(_defaults(), key)
        return None if value is _UNSET else value

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of every setting, nested (what export writes)."""
        return copy.deepcopy(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionSettings) and other._data == self._data

    def __repr__(self) -> str:
        return f"SessionSettings({self._data['session']!r})"

    # -- precedence ----------------------------------------------------------------------
    def resolved(self) -> Limits:
        """The effective limits after precedence (cached until the next ``set``)."""
        if self._resolved is None:
            get = self._get_or_default
            limit = get("session.limit") or {}
            mode = get("session.mode")
            chars = limit.get("chars")
            if chars is None and not limit.get("tokens"):  # a token budget replaces the char default
                chars = get("session.resize.max_messages_text_length")
            messages = limit.get("messages")
            if messages is None:
                messages = get("session.resize.max_keep_messages_count")
            enabled = get("session.memo.enabled")
            ratio = get("session.resize.prune_to_ratio")
            if ratio is None:
                ratio = 1.0 if mode == "lite" else 0.8
            tokens = limit.get("tokens") or 0
            encoding, model = get("session.tokens.encoding"), get("session.tokens.model")
            approximate = bool(get("session.tokens.approximate"))
            wants_tokens = bool(tokens or encoding or model or approximate)
            self._resolved = Limits(
                tokens=tokens,
                prune_tokens=int(tokens * (get("session.tokens.prune_to_ratio") or 0.8)),
                counter=(encoding, model, approximate) if wants_tokens else None,
                per_message=get("session.tokens.per_message"),
                per_name=get("session.tokens.per_name"),
                reply_priming=get("session.tokens.reply_priming"),
                summary_enabled=mode == "summary",
                reserve_tokens=min(get("session.summary.reserve_tokens"), tokens // 2) if tokens else get("session.summary.reserve_tokens"),
                summary_prompt=get("session.summary.prompt"),
                prune_chars=int((chars or 0) * ratio),
                chars=chars or 0,
                messages=messages or 0,
                every_n_turns=get("session.resize.every_n_turns") or 0,
                mode=mode,
                memo_enabled=(mode == "memo") if enabled is None else enabled and mode != "summary",
                instruct=tuple(get("session.memo.instruct")),
                chunk_tokens=get("session.memo.chunk_tokens"),
                fold_min_ratio=get("session.memo.fold_min_ratio"),
            )
        return self._resolved


def _lookup(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _UNSET
        node = node[part]
    return node


def _flatten(value: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted (key, leaf) pairs of a nested mapping; dotted keys inside are kept as given."""
    pairs: list[tuple[str, Any]] = []
    for name, item in value.items():
        key = f"{prefix}.{name}" if prefix else str(name)
        if isinstance(item, Mapping) and item and key not in _VALIDATORS:
            pairs.extend(_flatten(item, key))
        else:
            pairs.append((key, item))
    return pairs
