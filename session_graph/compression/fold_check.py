"""Whether a summary fold's reply took in what it was fed, and the fold asked again once when not.

A real model sometimes answers a fold with the previous summary unchanged, byte for byte,
although new messages were fed, or with a text that shares none of their content. Accepting
it would let those messages leave the window with nothing holding what they said. The fold is
checked: asked once more, and when the reply still ignores them the fold fails with the reason
(``MemoUpdateError``), so the messages stay in the window and the resize trace says why.

The check is deliberately narrow, never a judge of quality: "unchanged" only counts when the
new messages carry at least ``MIN_NEW_WORDS`` content words the previous summary does not have
(a fold of "ok, thanks" may leave the summary as it was), and "shares none" only looks at the
fed messages' *anchors*, the tokens a faithful summary keeps in any language (numbers of two or
more digits, identifiers with digits, ``_``, ``.`` or ``/``, and capitalised names inside a
sentence): it counts only when they carry at least ``MIN_NOVEL`` of them and the reply has none
of them and none of the messages' content words either.
A Spanish conversation summarised in English is never called ignored for its words.

Only the library's own model summariser is checked; a user's summary handler is not second-guessed.
"""

from __future__ import annotations

from collections.abc import Callable
import re
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph._base.flow import Flow, call
from session_graph.errors import MemoUpdateError

__all__ = ["MIN_NEW_WORDS", "MIN_NOVEL", "checked_summary_fold", "ignored_reason"]

MIN_NEW_WORDS = 12
"""New content words the fed messages must carry before an unchanged summary is called ignored."""
MIN_NOVEL = 5
"""Anchors (numbers, identifiers, names) the fed messages must carry before a reply sharing none of them is called ignored."""

_WORD = re.compile(r"[a-z0-9][a-z0-9_$%.-]*[a-z0-9%]|[a-z0-9]", re.IGNORECASE)
_STOP = frozenset((
    "about", "above", "after", "again", "also", "because", "been", "before", "being", "below",
    "between", "both", "could", "does", "doing", "down", "during", "each", "from", "further", "have",
    "having", "here", "into", "itself", "just", "more", "most", "other", "over", "same", "should",
    "some", "such", "than", "that", "their", "theirs", "them", "then", "there", "these", "they", "this",
    "those", "through", "under", "until", "very", "what", "when", "where", "which", "while", "will",
    "with", "would", "your", "yours", "okay", "thanks", "thank", "great", "sure", "good", "fine",
    "yeah", "welcome", "please", "hello", "right", "cool", "awesome", "perfect", "helpful", "appreciate",
))


def _content(word: str) -> bool:
    """A word that carries content: a number of 2+ digits, or a word of 4+ characters with 3+
    letters that is not a stop word (placeholders like ``u12`` are not content)."""
    if word[0].isdigit():
        return sum(c.isdigit() for c in word) >= 2
    return len(word) >= 4 and sum(c.isalpha() for c in word) >= 3 and word not in _STOP


def _words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if _content(w)}


_ANCHOR = re.compile(r"[^\W_][\w.$%/-]*[\w%]|[^\W_]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"'(\[]\s*)$")


def _coded(word: str) -> bool:
    """A number or code: 2026, 555-1234, INV-9912, config_v2.yaml (not a placeholder like u12)."""
    letters, digits = sum(c.isalpha() for c in word), sum(c.isdigit() for c in word)
    if digits >= 2 and (letters == 0 or letters >= 2):
        return True
    return any(c in word for c in "_/") or ("." in word and word.replace(".", "").isalnum() and not word.isalpha())


def _named(word: str) -> bool:
    """A capitalised word of 3+ letters that is no stop word (a name, if it does not open a sentence)."""
    return word[:1].isupper() and sum(c.isalpha() for c in word) >= 3 and word.lower() not in _STOP


def _anchors(text: str) -> set[str]:
    """Tokens a summary keeps in any language: numbers of 2+ digits (alone or in an identifier of
    2+ letters), identifiers with ``_ . /``, and capitalised words of 3+ letters that do not open a
    sentence."""
    found = set()
    for m in _ANCHOR.finditer(text):
        word = m.group(0).rstrip(".")
        if _coded(word) or (_named(word) and not _SENTENCE_START.search(text, 0, m.start())):
            found.add(word.lower())
    return found


def ignored_reason(previous: str, messages: list[BaseMessage], reply: str) -> str | None:
    """Why ``reply`` ignores the ``messages`` it was fed with ``previous``, or None when it does not."""
    fed = _words(" ".join(str(m.text) for m in messages))
    novel = fed - _words(previous)
    if len(novel) >= MIN_NEW_WORDS and " ".join(reply.split()) == " ".join(previous.split()):
        return f"the reply is the previous summary unchanged although {len(messages)} new message(s) were fed"
    anchors = _anchors(" ".join(str(m.text) for m in messages))
    said = _anchors(reply) | _words(reply)
    if len(anchors) >= MIN_NOVEL and not anchors & said and not fed & said:
        return f"the reply shares none of the {len(anchors)} names and numbers of the {len(messages)} message(s) fed"
    return None


def checked_summary_fold(summarize: Callable[..., Any], summary: str, messages: list[BaseMessage], settings: Any) -> Flow[Any]:
    """``summarize(summary, messages, settings)`` (a handler or a flow), asked once more when its
    reply ignores the messages; a second ignoring reply raises ``MemoUpdateError`` with the reason.
    A reply that is not text is returned as it is (the fold reports it)."""
    folded = yield from call(summarize, summary, messages, settings)
    if not isinstance(folded, str):
        return folded
    why = ignored_reason(summary, messages, folded)
    if why is None:
        return folded
    again = yield from call(summarize, summary, messages, settings)
    if not isinstance(again, str) or (ignored_reason(summary, messages, again)) is None:
        return again
    raise MemoUpdateError(
        f"the summary ignored the messages it was fed, twice ({why}); they stay in the window, not pruned."
    )
