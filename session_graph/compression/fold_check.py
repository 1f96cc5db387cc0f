"""Whether a summary fold's reply took in what it was fed, and the fold asked again once when not.

A real model sometimes answers a fold with the previous summary unchanged, byte for byte,
although new messages were fed, or with a text that shares none of their content. Accepting
it would let those messages leave the window with nothing holding what they said. The fold is
checked: asked once more, and when the reply still ignores them the fold fails with the reason
(``MemoUpdateError``), so the messages stay in the window and the resize trace says why.

The check is deliberately narrow, never a judge of quality: "unchanged" only counts when the
new messages carry at least ``MIN_NEW_WORDS`` content words the previous summary does not have
(a fold of "ok, thanks" may leave the summary as it was), and "shares none" only when the
reply has not one of the fed messages' content words (at least ``MIN_NOVEL`` of them): a reply
that rewords what it knew in the words of the new messages is never called ignored.
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
MIN_NOVEL = 8
"""Content words the fed messages must carry before a reply sharing none of them is called ignored."""

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


def ignored_reason(previous: str, messages: list[BaseMessage], reply: str) -> str | None:
    """Why ``reply`` ignores the ``messages`` it was fed with ``previous``, or None when it does not."""
    fed = _words(" ".join(str(m.text) for m in messages))
    novel = fed - _words(previous)
    if len(novel) >= MIN_NEW_WORDS and " ".join(reply.split()) == " ".join(previous.split()):
        return f"the reply is the previous summary unchanged although {len(messages)} new message(s) were fed"
    if len(fed) >= MIN_NOVEL and not fed & _words(reply):
        return f"the reply shares none of the {len(fed)} content words of the {len(messages)} message(s) fed"
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
