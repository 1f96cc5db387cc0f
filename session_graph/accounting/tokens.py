"""Token counters: exact (tiktoken, offline), the spec's characters, and a script-aware estimate.

A :class:`TokenCounter` measures text; :func:`message_tokens` applies the per-message rules
(OpenAI's chat overhead, tool calls, names, images) on top of any counter. Exact counting
never reaches for the network: ``cl100k_base`` and ``o200k_base`` are loaded from data that
ships with this package (see ``_data/README.md``), checked against the SHA-256 that tiktoken
itself records, and built with tiktoken's own encoding definitions. An encoding that is
truly unavailable falls back to :class:`ApproxTokenCounter` with a warning, never silently.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
import functools
import gzip
import hashlib
from importlib import resources
import json
import math
import threading
from typing import Any, Protocol, runtime_checkable
import warnings

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
import regex
import tiktoken
from tiktoken_ext import openai_public

from session_graph.accounting.attachments import is_inline_binary, summarize_part
from session_graph.accounting.sizing import message_chars
from session_graph.messages import content_parts, part_text, role_of

__all__ = [
    "BUNDLED_ENCODINGS",
    "ApproxTokenCounter",
    "CharCounter",
    "CostRules",
    "TiktokenCounter",
    "TokenCounter",
    "calls_text",
    "image_tokens",
    "load_encoding",
    "message_tokens",
    "token_measure",
    "truncate_to_tokens",
]

BUNDLED_ENCODINGS = ("cl100k_base", "o200k_base")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of text. ``name`` says which counter it is; ``exact`` if it is not an estimate."""

    name: str
    exact: bool

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` (special-token strings count as ordinary text)."""
        ...


@dataclass(frozen=True, slots=True)
class CostRules:
    """What a chat message costs beyond its text (OpenAI's documented chat format by default).

    Attributes:
        per_message: tokens each message adds (``<|start|>role ... <|end|>``): 3.
        per_name: extra tokens when a message has a ``name``: 1.
        reply_priming: tokens every request adds to prime the reply: 3.
        image_low: an image with ``detail="low"``: 85.
        image_base: the base cost of a tiled image: 85.
        image_tile: each 512-px tile: 170.
        image_unknown: an image whose size is not known: 1,000.
    """

    per_message: int = 3
    per_name: int = 1
    reply_priming: int = 3
    image_low: int = 85
    image_base: int = 85
    image_tile: int = 170
    image_unknown: int = 1000


class CharCounter:
    """The spec's character approximation as a counter: one "token" per character."""

    name = "chars"
    exact = False

    def count_text(self, text: str) -> int:
        """Characters of ``text`` (the spec's approximation: one per character)."""
        return len(text)


class TiktokenCounter:
    """Exact counts with a tiktoken encoding (``encode_ordinary``: ``<|endoftext|>`` is text)."""

    exact = True

    def __init__(self, encoding: str | tiktoken.Encoding = "o200k_base") -> None:
        self.encoding = load_encoding(encoding) if isinstance(encoding, str) else encoding
        self.name = f"tiktoken:{self.encoding.name}"
        # ASCII text goes straight to tiktoken's core (what ``encode_ordinary`` calls; its wrapper
        # only catches the UnicodeEncodeError that ASCII cannot raise): one call less per message
        core = getattr(self.encoding, "_core_bpe", None)
        self.encode_ascii: Callable[[str], list[int]] = getattr(core, "encode_ordinary", None) or self.encoding.encode_ordinary

    def __reduce__(self) -> tuple[Any, ...]:  # a bundled encoding by name (its Rust core pickles as no object)
        return (TiktokenCounter, (self.encoding.name,)) if self.encoding.name in BUNDLED_ENCODINGS else super().__reduce__()

    def count_text(self, text: str) -> int:
        """Exact tokens of ``text`` with this encoding (special-token strings count as text)."""
        if text.isascii():
            return len(self.encode_ascii(text))
        # tiktoken reads a str through its UTF-8 form, which CPython then keeps inside the
        # str for good (more than doubling a CJK message). Count a throwaway copy instead.
        return len(self.encoding.encode_ordinary(text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")))


# Pieces as the o200k/cl100k pre-tokenizers cut them: words, digit groups, punctuation runs, spaces.
_PIECES = regex.compile(
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_WIDE = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}]")
_LATIN = regex.compile(r"[A-Za-z]")
_UPPER = regex.compile(r"[A-Z]")


class ApproxTokenCounter:
    """A script-aware estimate, for when no exact encoding is available.

    Text is cut into the pieces a BPE pre-tokenizer makes. A CJK (or Thai) character is
    about one token; a Latin word about one token per 7 letters, plus one per inner
    capital (camelCase); a random-looking run (base64, hashes) one per 1.5 characters;
    other letters one per 2; a digit group one; punctuation one per 3 characters. The common
    ``len(text) / 4`` is about 4x too low on Chinese; this stays within 0.9x to 1.2x of
    ``o200k_base`` on English, code, JSON and base64, erring high (``bench/bench_tokens.py``).
    """

    name = "approx:script-aware"
    exact = False

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` (see the class docstring for the rules)."""
        total = 0
        for piece in _PIECES.findall(text):
            wide = len(_WIDE.findall(piece))
            if wide:
                total += wide + math.ceil((len(piece) - wide) / 4)
                continue
            core = piece.strip()
            if not core:  # whitespace: a newline run or an indent is one token
                total += 1 if "\n" in piece or len(piece) > 1 else 0
            elif core[0].isalpha() or core[-1].isalpha():
                capitals = len(_UPPER.findall(core, 1))
                if capitals * 4 > len(core):
                    total += math.ceil(len(core) / 1.5)
                else:
                    latin = len(_LATIN.findall(core))
                    total += max(1, math.ceil(latin / 7 + (len(core) - latin) / 2)) + capitals
            elif core.isdigit():
                total += 1
            else:
                total += math.ceil(len(core) / 3)
        return total


_load_lock = threading.Lock()


@functools.lru_cache(maxsize=8)
def load_encoding(name: str) -> tiktoken.Encoding:
    """A tiktoken encoding from the bundled data, with no network access.

    Raises:
        LookupError: ``name`` is not one of ``BUNDLED_ENCODINGS`` (or its data is damaged).
    """
    if name not in BUNDLED_ENCODINGS:
        raise LookupError(
            f"encoding {name!r} is not bundled; offline exact counting supports {', '.join(BUNDLED_ENCODINGS)}."
        )
    packed = resources.files("session_graph").joinpath("_data", f"{name}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)

    def bundled(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if not url.endswith(f"/{name}.tiktoken"):
            raise LookupError(f"{name} asked for {url}, which is not bundled")
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise LookupError(f"the bundled {name} data does not match tiktoken's expected hash; reinstall the package")
        return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}

    # tiktoken's own definition of the encoding (pattern, special tokens, expected hash),
    # with its downloader swapped for the bundled file while it runs.
    with _load_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = bundled
        try:
            spec = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def counter_for(*, encoding: str | None = None, model: str | None = None, approximate: bool = False) -> TokenCounter:
    """The counter for an encoding name, a model name, or neither (``o200k_base``).

    An unknown model or an encoding that is not bundled gives the approximate counter and a
    ``RuntimeWarning`` that says so.
    """
    if approximate:
        return ApproxTokenCounter()
    if encoding is None and model is not None:
        try:
            encoding = tiktoken.encoding_name_for_model(model)
        except KeyError:
            warnings.warn(
                f"no tiktoken encoding is known for model {model!r}; counting with {ApproxTokenCounter.name} "
                "instead. Set session.tokens.encoding to count exactly.",
                RuntimeWarning,
                stacklevel=3,
            )
            return ApproxTokenCounter()
    try:
        return TiktokenCounter(encoding or "o200k_base")
    except LookupError as error:
        warnings.warn(f"{error}; counting with {ApproxTokenCounter.name} instead.", RuntimeWarning, stacklevel=3)
        return ApproxTokenCounter()


def image_tokens(part: dict[str, Any], rules: CostRules = CostRules()) -> int:
    """Tokens of an image part: low detail 85; else 85 + 170 per 512-px tile; 1,000 if size unknown."""
    nested = part.get("image_url") if isinstance(part.get("image_url"), dict) else {}
    detail = part.get("detail") or nested.get("detail")
    if detail == "low":
        return rules.image_low
    meta = summarize_part(part)["meta"]
    width, height = meta.get("width"), meta.get("height")
    if not isinstance(width, int | float) or not isinstance(height, int | float) or width <= 0 or height <= 0:
        return rules.image_unknown
    scale = min(1.0, 2048 / max(width, height))  # fit in 2048 x 2048
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))  # then the short side to 768
    width, height = width * scale, height * scale
    tiles = math.ceil(width / 512) * math.ceil(height / 512)
    return rules.image_base + rules.image_tile * tiles


def _is_image(part: dict[str, Any]) -> bool:
    kind = part.get("type")
    return kind in ("image_url", "image", "input_image")


_ROLE_TOKENS: dict[tuple[str, str], int] = {}


def _role_tokens(counter: TokenCounter, role: str) -> int:
    """Tokens of a role name; there are few, so each is counted once per counter. Cached by name
    for this module's counters only: a name says which they are, while two users' counters may
    share one (``custom:<lambda>``) and count differently."""
    if type(counter) not in (TiktokenCounter, ApproxTokenCounter, CharCounter):
        return counter.count_text(role)
    key = (counter.name, role)
    if key not in _ROLE_TOKENS:
        _ROLE_TOKENS[key] = counter.count_text(role)
    return _ROLE_TOKENS[key]


_DUMPS = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)``, the encoder made once (``dumps`` makes one per call for non-default options)."""


_TEXT = json.encoder.encode_basestring  # what ``_DUMPS`` makes of a str (ensure_ascii=False), without an encoder


def calls_text(calls: list[Any]) -> str:
    """The text a reply's tool calls are counted by: each call's id, name and JSON arguments, as JSON
    (``_DUMPS`` of ``[{"id", "name", "arguments"}]``, written around the arguments' JSON: one encoder a call)."""
    parts = []
    for call in calls:
        key, name = call.get("id"), call["name"]
        if type(name) is not str or (key is not None and type(key) is not str):
            return _DUMPS([{"id": c.get("id"), "name": c["name"], "arguments": _DUMPS(c["args"])} for c in calls])
        parts.append(f'{{"id": {"null" if key is None else _TEXT(key)}, "name": {_TEXT(name)}, "arguments": {_TEXT(_DUMPS(call["args"]))}}}')
    return f"[{', '.join(parts)}]"


def message_tokens(message: BaseMessage, counter: TokenCounter, rules: CostRules = CostRules()) -> int:
    """What one message costs: text, images, tool calls, ids, name, and the per-message overhead.

    With :class:`CharCounter` this is the spec's approximation (``len(role) + 1 + content``,
    plus tool calls), so one function serves every counter. A counter with its own
    ``count_message`` (a provider's count, ``session.counter``) prices the message itself.
    """
    count_message = getattr(counter, "count_message", None)
    if count_message is not None:
        return int(count_message(message))
    if isinstance(counter, CharCounter):
        return message_chars(message)
    total = rules.per_message + _role_tokens(counter, role_of(message))
    for part in content_parts(message):
        if (text := part_text(part)) is not None:
            total += counter.count_text(text)
        elif _is_image(part):
            total += image_tokens(part, rules)
        elif is_inline_binary(part):
            total += counter.count_text(json.dumps(summarize_part(part), ensure_ascii=False))
        else:
            total += counter.count_text(json.dumps(part, ensure_ascii=False, default=str))
    if isinstance(message, AIMessage) and message.tool_calls:
        total += counter.count_text(calls_text(message.tool_calls))
    if isinstance(message, ToolMessage):
        total += counter.count_text(message.tool_call_id)
    if message.name:
        total += rules.per_name + counter.count_text(message.name)
    return total


def token_measure(counter: TokenCounter, rules: CostRules = CostRules()) -> Callable[[BaseMessage], int]:
    """``message_tokens`` with ``counter`` and ``rules`` bound, the counter's kind resolved once.

    What is the same for every message (whether the counter prices whole messages, the
    per-message overhead and each role's tokens) is settled here, not per message: a plain
    message (a text content, no name, no tool calls, no tool call id) then costs one
    ``count_text`` and two lookups; a reply's tool calls, a tool result's call id and a name (a
    tool's recurs: counted once per name for this module's counters) are added as
    ``message_tokens`` adds them; content blocks and other classes go through ``message_tokens``.
    The same counts.
    """
    if getattr(counter, "count_message", None) is not None or isinstance(counter, CharCounter):
        return functools.partial(message_tokens, counter=counter, rules=rules)  # not a lambda: it pickles when the counter does
    count = counter.count_text
    encode_ascii = counter.encode_ascii if type(counter) is TiktokenCounter else None  # ASCII text: one call, no wrapper
    try:
        base = {kind: rules.per_message + _role_tokens(counter, role)
                for kind, role in ((HumanMessage, "user"), (AIMessage, "assistant"), (SystemMessage, "system"), (ToolMessage, "tool"))}
    except Exception:  # a counter that fails on a role name fails in message_tokens, on the message
        base = {}  # that is appended (nothing registered), as it would on any other text
    per_name = rules.per_name
    names: dict[str, int] | None = {} if type(counter) in (TiktokenCounter, ApproxTokenCounter) else None  # a tool's name recurs: counted once (this module's counters only: a user's may not be a function of the text)

    def measure(message: BaseMessage) -> int:
        kind = type(message)
        overhead = base.get(kind)
        content = message.content
        if overhead is None or type(content) is not str:
            return message_tokens(message, counter, rules)
        total = overhead + ((len(encode_ascii(content)) if encode_ascii is not None and content.isascii() else count(content))
                            if content else 0)
        if kind is AIMessage:
            calls = message.tool_calls
            if calls:
                total += count(calls_text(calls))
        elif kind is ToolMessage:
            total += count(message.tool_call_id)  # type: ignore[attr-defined]
        name = message.name
        if name:
            if names is None:
                total += per_name + count(name)
            else:
                tokens = names.get(name)
                if tokens is None:
                    if len(names) >= 256:
                        names.clear()
                    tokens = names[name] = count(name)
                total += per_name + tokens
        return total

    measure.remake = functools.partial(token_measure, counter, rules)  # type: ignore[attr-defined]  # what a pickled Measures keeps
    return measure


def truncate_to_tokens(text: str, max_tokens: int, measure: Callable[[str], int]) -> str:
    """The longest prefix of ``text`` whose ``measure`` is within ``max_tokens``, by binary search.

    ``measure`` is ``counter.count_text`` for plain text, or the cost of a whole message
    built around the text.
    """
    if max_tokens <= 0:
        return ""
    if measure(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # invariant: measure(text[:low]) <= max_tokens < measure(text[:high])
    while high - low > 1:
        middle = (low + high) // 2
        if measure(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle
    return text[:low]
