"""Your own token counter, and the session's counter as a LangChain ``token_counter``.

:func:`as_token_counter` turns what users already have into a :class:`~session_graph.accounting.tokens.TokenCounter`:

- a counter of this package (``TiktokenCounter``, ``ApproxTokenCounter``...), as is;
- a tokenizer-like object with ``encode`` (a Hugging Face tokenizer, a tiktoken ``Encoding``);
- a LangChain chat model (``get_num_tokens_from_messages``: the provider's own count);
- an object with a ``count_tokens`` method, or a plain callable: ``str -> int`` (text) or
  ``list[BaseMessage] -> int`` (messages), told apart by the first parameter's annotation, or,
  unannotated, by whether it accepts a string.

A text counter gets the per-message rules (overhead, names, images, tool calls) on top; a
messages counter prices each message alone (``counter([message])``), so its own overheads apply.

:class:`SessionCounter` (``session.counter``) is a ``TokenCounter`` that is also callable on a
list of messages, as ``langchain_core.messages.trim_messages(token_counter=...)`` calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import inspect
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from session_graph.accounting.tokens import CharCounter, CostRules, TokenCounter, message_tokens
from session_graph.errors import ConfigurationError

__all__ = ["MessagesCounter", "SessionCounter", "TextCounter", "as_token_counter"]


class TextCounter:
    """A ``TokenCounter`` around a function ``str -> int``."""

    def __init__(self, count: Callable[[str], int], name: str, *, exact: bool = True) -> None:
        self._count = count
        self.name = name
        self.exact = exact

    def count_text(self, text: str) -> int:
        """Tokens of ``text``, as the wrapped function counts them."""
        return _whole(self._count(text), self.name)


class MessagesCounter:
    """A ``TokenCounter`` around a function ``list[BaseMessage] -> int`` (a provider's count).

    Each message is priced alone (``count([message])``); text is priced as a user message's
    content, less what an empty user message costs.
    """

    def __init__(self, count: Callable[[list[BaseMessage]], int], name: str, *, exact: bool = True) -> None:
        self._count = count
        self.name = name
        self.exact = exact
        self._empty: int | None = None

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one message, overheads included, as the wrapped function counts them."""
        return _whole(self._count([message]), self.name)

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` as a message's content."""
        if self._empty is None:
            self._empty = self.count_message(HumanMessage(content=""))
        return max(0, self.count_message(HumanMessage(content=text)) - self._empty)


class SessionCounter:
    """The session's counter with its cost rules: ``count_text`` for text, ``count_message``
    for one message, and callable on a list of messages (what they cost as one request,
    reply priming included), so ``trim_messages(token_counter=session.counter)`` works.

    Example:
        >>> from langchain_core.messages import HumanMessage, trim_messages
        >>> from session_graph import Session
        >>> session = Session(settings={"session.limit": {"tokens": 1000}})
        >>> kept = trim_messages([HumanMessage("a " * 50), HumanMessage("hi")], max_tokens=20,
        ...                      token_counter=session.counter, strategy="last")
        >>> [m.content for m in kept]
        ['hi']
    """

    def __init__(self, counter: TokenCounter, rules: CostRules) -> None:
        self.counter = counter
        self.rules = rules
        self.name: str = counter.name
        self.exact: bool = counter.exact

    def count_text(self, text: str) -> int:
        """Tokens of ``text``."""
        return self.counter.count_text(text)

    def count_message(self, message: BaseMessage) -> int:
        """What one message costs (its text, images, tool calls, name and overhead)."""
        return message_tokens(message, self.counter, self.rules)

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        """What ``messages`` cost as one request (reply priming included when counting tokens)."""
        if isinstance(messages, BaseMessage):
            messages = [messages]
        total = sum(self.count_message(m) for m in messages)
        return total + (self.rules.reply_priming if messages and not isinstance(self.counter, CharCounter) else 0)

    def __repr__(self) -> str:
        return f"SessionCounter({self.name})"


def as_token_counter(value: Any, *, name: str | None = None) -> TokenCounter:
    """A ``TokenCounter`` for ``value`` (see the module's list).

    Raises:
        ConfigurationError: ``value`` is none of the accepted kinds.

    Example:
        >>> counter = as_token_counter(lambda text: len(text.split()), name="words")
        >>> counter.count_text("three little words"), counter.name
        (3, 'words')
    """
    if isinstance(value, SessionCounter):
        return value.counter
    if callable(getattr(value, "count_text", None)) and hasattr(value, "name") and hasattr(value, "exact"):
        return value  # type: ignore[no-any-return]
    kind = type(value).__name__
    if callable(getattr(value, "get_num_tokens_from_messages", None)):  # a LangChain model: the provider's count
        return MessagesCounter(value.get_num_tokens_from_messages, name or f"model:{kind}")
    encode = getattr(value, "encode_ordinary", None) or getattr(value, "encode", None)
    if callable(encode):  # a tokenizer: special tokens are not added, text is text
        return TextCounter(_encoder(value, encode), name or f"tokenizer:{getattr(value, 'name_or_path', None) or kind}")
    count = getattr(value, "count_tokens", None)
    if callable(count):
        value = count
    if not callable(value):
        raise ConfigurationError(
            f"a token counter must be a function (str -> int or list of messages -> int), a tokenizer with .encode, "
            f"a LangChain chat model, or an object with count_tokens; got {kind}."
        )
    label = name or f"custom:{getattr(value, '__name__', kind)}"
    if _takes_text(value):
        return TextCounter(value, label)
    return MessagesCounter(value, label)


def _encoder(tokenizer: Any, encode: Callable[..., Any]) -> Callable[[str], int]:
    try:
        takes_flag = "add_special_tokens" in inspect.signature(encode).parameters
    except (TypeError, ValueError):
        takes_flag = False

    def count(text: str) -> int:
        encoded = encode(text, add_special_tokens=False) if takes_flag else encode(text)
        ids = getattr(encoded, "ids", encoded)  # tokenizers.Tokenizer.encode gives an Encoding
        return len(ids)

    return count


_TEXT_NAMES = frozenset({"text", "string", "s", "content", "prompt"})
_MESSAGES_NAMES = frozenset({"messages", "msgs", "history", "conversation"})


def _takes_text(function: Callable[..., Any]) -> bool:
    """Whether ``function`` counts text rather than a list of messages: by its first parameter's
    annotation (``str``, or a list), else its name (``text``, ``messages``...), else by trying it
    on both; a function that takes both alike is ambiguous and refused (annotate it)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    first = parameters[0] if parameters else None
    annotation = first.annotation if first is not None else inspect.Parameter.empty
    if annotation is not inspect.Parameter.empty:
        return annotation in (str, "str")
    if first is not None and first.name in _TEXT_NAMES | _MESSAGES_NAMES:
        return first.name in _TEXT_NAMES
    takes_text, takes_messages = _counts(function, "a"), _counts(function, [HumanMessage(content="a")])
    if takes_text != takes_messages:
        return takes_text
    raise ConfigurationError(
        f"cannot tell whether the token counter {getattr(function, '__name__', function)!r} counts text or a list of "
        "messages: annotate its first parameter (text: str, or messages: list[BaseMessage]) or name it text/messages."
    )


def _counts(function: Callable[..., Any], sample: Any) -> bool:
    try:
        value = function(sample)
    except Exception:  # a counter of the other kind fails on this sample
        return False
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"the token counter {name!r} returned {value!r}; a counter must return a whole number >= 0.")
    return value
