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

from collections.abc import Mapping
import copy
from dataclasses import dataclass
from difflib import get_close_matches
import re
from typing import Any, get_args
import warnings

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from session_graph.errors import SettingsError
from session_graph.settings_schema import DEFAULT_MEMO_INSTRUCT, SettingsModel

__all__ = ["DEFAULT_MEMO_INSTRUCT", "Limits", "SessionSettings"]

_LEGACY = {
    "session.resize.max_current_chars": "session.resize.max_messages_text_length (or session.limit.chars)",
    "session.resize.keep_last_messages": "session.resize.max_keep_messages_count (or session.limit.messages)",
}
_UNSET = object()
_CREDENTIAL = re.compile(r"api[_-]?key|secret|passw(or)?d|credential|access[_-]?token|auth[_-]?token|bearer|private[_-]?key",
                         re.IGNORECASE)
_DEFAULTS: dict[str, Any] = SettingsModel().model_dump()
_CHUNK_TOKENS = 2000  # the smallest default fold chunk (session.memo.chunk_tokens unset)


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
        prune_messages: the count a prune cuts the window to (``messages`` x ``prune_to_ratio``, rounded,
            at least 1): the low-water mark that spares a resize, or a memo fold, every turn.
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
            (under a char limit: four chars a token); unset, it follows the budget: the token
            budget less the reserve (a window's worth a call), at least 2000.
        fold_min_ratio: a lite resize folds into the memo only when what waits to be folded
            is at least this share of the window's limit (a prune that needs it always folds;
            1.0 by default: a fold waits until it must, so each call carries a window's worth).
        system_messages: where the view puts system messages: ``"keep"``, ``"front"`` or
            ``"merge"`` (see ``system_order``).
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
    fold_min_ratio: float = 1.0
    system_messages: str = "keep"
    prune_messages: int = 0


def _defaults() -> dict[str, Any]:
    return copy.deepcopy(_DEFAULTS)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The section model inside a field's annotation (``X`` or ``X | None``), if any."""
    return next((t for t in (get_args(annotation) or (annotation,)) if isinstance(t, type) and issubclass(t, BaseModel)), None)


def _field(path: list[str]) -> FieldInfo | None:
    """The schema field at a dotted path, or None if the schema has no such key."""
    model: type[BaseModel] | None = SettingsModel
    field: FieldInfo | None = None
    for part in path:
        if model is None or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = _model_of(field.annotation)
    return field


def _is_section(path: list[str]) -> bool:
    """Whether ``path`` is a section (walked into on construction, never replaced as a leaf)."""
    field = _field(path)
    return field is not None and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


def _section_fields(path: list[str]) -> list[str]:
    model: type[BaseModel] | None = SettingsModel
    for part in path:
        model = _model_of(model.model_fields[part].annotation) if model is not None else None
    return list(model.model_fields) if model is not None else []


def _quoted(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _explain(error: Any) -> str:
    """One pydantic error as a sentence naming the setting, what it must be, and a fix."""
    path = [str(part) for part in error["loc"] if isinstance(part, str)]
    if error["type"] == "extra_forbidden":
        parent, name = path[:-1], path[-1]
        fields = _section_fields(parent)
        close = get_close_matches(name, fields, 1)
        hint = f" (did you mean {'.'.join([*parent, close[0]])!r}?)" if close else ""
        return f"{'.'.join(parent)} has no setting {name!r}{hint}; it takes only {_quoted(fields)}."
    field = _field(path)
    what = field.description if field is not None and field.description else "something else"
    return f"{'.'.join(path)} must be {what}, got {error['input']!r}."


def _check_credentials(key: str, value: Any) -> None:
    names = [key]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            names.extend(str(k) for k in item)
            stack.extend(item.values())
    for name in names:
        if _CREDENTIAL.search(name):
            raise SettingsError(
                f"setting {name!r} looks like a credential; credentials belong to the model object "
                "(e.g. ChatOpenAI(api_key=...)), never in session settings, which are exported and stored."
            )


class SessionSettings:
    """The session's own settings (only the ``session.*`` namespace, never credentials).

    Example:
        >>> settings = SessionSettings()
        >>> settings["session.resize.every_n_turns"]
        8
        >>> settings.set("session.limit", {"chars": 4000}).resolved().chars
        4000
    """

    __slots__ = ("_data", "_resolved", "_saved")

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = _defaults()
        self._resolved: Limits | None = None
        self._saved: dict[str, Any] | None = None
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
        """The value at a dotted key (a copy for dicts and lists), or its schema default, or ``default``."""
        value = _lookup(self._data, key)
        if value is _UNSET:
            parts = key.split(".")
            if _field(parts) is None:
                return default
            value = _lookup(_DEFAULTS, key)
            if value is _UNSET:
                return None
        return copy.deepcopy(value)

    def set(self, key: str, value: Any) -> SessionSettings:
        """Replace the value at a dotted key (lists and dicts are replaced, never merged).

        Raises:
            SettingsError: the key is outside ``session.*``, unknown (with a did-you-mean), looks
                like a credential, or its value has the wrong type; nothing changes then.
        """
        if not isinstance(key, str) or not (key == "session" or key.startswith("session.")):
            raise SettingsError(
                f"setting key {key!r} is outside the 'session.' namespace; session settings hold "
                "only session.* keys (credentials and model settings belong to the model object)."
            )
        parts = key.split(".")
        if any(not part for part in parts):
            raise SettingsError(f"setting key {key!r} has an empty part.")
        if key in _LEGACY:
            warnings.warn(f"{key} is a legacy key and is not honoured; use {_LEGACY[key]}.", DeprecationWarning, stacklevel=3)
            return self
        _check_credentials(key, value)
        staged = copy.deepcopy(self._data)
        if key == "session":
            staged = {"session": copy.deepcopy(dict(value)) if isinstance(value, Mapping) else value}
        else:
            node = staged
            for part in parts[:-1]:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[parts[-1]] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
        try:
            SettingsModel.model_validate(staged)
        except ValidationError as error:
            raise SettingsError(_explain(error.errors()[0])) from None
        self._data = staged
        self._resolved = self._saved = None
        return self

    def _get_or_default(self, key: str) -> Any:
        return self.get(key)

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of every setting, nested (what export writes)."""
        return _copied(self._data)

    def saved(self) -> dict[str, Any]:
        """Every setting, nested, as one copy shared until the next ``set``: what a store writes
        on every save. Read it, never change it (``to_dict`` gives a copy of your own); a copy
        someone edited anyway is replaced (one comparison, ~20x cheaper than the copy), so the
        next save never writes their edit."""
        if self._saved is None or self._saved != self._data:
            self._saved = _copied(self._data)
        return self._saved

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
            reserve = min(get("session.summary.reserve_tokens"), tokens // 2) if tokens else get("session.summary.reserve_tokens")
            self._resolved = Limits(
                tokens=tokens,
                prune_tokens=int(tokens * (get("session.tokens.prune_to_ratio") or 0.9)),
                counter=(encoding, model, approximate) if wants_tokens else None,
                per_message=get("session.tokens.per_message"),
                per_name=get("session.tokens.per_name"),
                reply_priming=get("session.tokens.reply_priming"),
                summary_enabled=mode == "summary",
                reserve_tokens=reserve,
                summary_prompt=get("session.summary.prompt"),
                prune_chars=int((chars or 0) * ratio),
                chars=chars or 0,
                messages=messages or 0,
                prune_messages=max(1, round(messages * ratio)) if messages else 0,
                every_n_turns=get("session.resize.every_n_turns") or 0,
                mode=mode,
                memo_enabled=(mode == "memo") if enabled is None else enabled and mode != "summary",
                instruct=tuple(get("session.memo.instruct")),
                chunk_tokens=get("session.memo.chunk_tokens") or max(_CHUNK_TOKENS, tokens - reserve),
                fold_min_ratio=get("session.memo.fold_min_ratio"),
                system_messages=get("session.view.system_messages"),
            )
        return self._resolved


def _copied(value: Any) -> Any:
    """A deep copy of validated settings (dicts, lists and scalars: 4x faster than ``copy.deepcopy``)."""
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return value if value is None or type(value) in (str, int, float, bool) else copy.deepcopy(value)


def _lookup(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _UNSET
        node = node[part]
    return node


def _flatten(value: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted (key, leaf) pairs of a nested mapping: sections are walked, every other value is a leaf."""
    pairs: list[tuple[str, Any]] = []
    for name, item in value.items():
        key = f"{prefix}.{name}" if prefix else str(name)
        if isinstance(item, Mapping) and item and (key == "session" or _is_section(key.split("."))):
            pairs.extend(_flatten(item, key))
        else:
            pairs.append((key, item))
    return pairs
