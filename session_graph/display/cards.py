"""The Jupyter cards of a session and of a view: small self-contained HTML, no network.

Everything is escaped, styled inline (no stylesheet, script or font from anywhere), and
bounded: a memo or summary is previewed, never printed whole; at most five resizes are
listed; a view lists at most eight messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
import json
from typing import Any, Protocol

__all__ = ["CardSession", "CardView", "session_card", "view_card"]


class CardSession(Protocol):
    """What ``session_card`` reads of a ``Session`` (display sits below the facade: it never imports it)."""

    @property
    def id(self) -> str: ...

    @property
    def turns(self) -> int: ...

    @property
    def settings(self) -> Any: ...

    @property
    def window_totals(self) -> Any: ...

    @property
    def counter(self) -> Any: ...

    @property
    def full_chat_history(self) -> Sequence[Any]: ...

    @property
    def memo(self) -> dict[str, Any]: ...

    @property
    def memo_for_model(self) -> dict[str, Any]: ...

    @property
    def trace(self) -> Any: ...  # iterable and sized: a resize.trace.ResizeTrace


class CardView(Protocol):
    """What ``view_card`` reads of a ``SessionView``."""

    messages: list[Any]
    tokens: int
    budget: int
    counter: str
    exact: bool
    truncated: Any
    elided: int

_BOX = ("font-family:Helvetica,Arial,sans-serif;font-size:12px;line-height:1.45;color:#222;border:1px solid #d0cbf5;"
        "border-radius:6px;padding:8px 12px;max-width:640px;background:#fcfbff")
_MUTED = "color:#666"


def _bar(value: int, limit: int, total: int | None = None, label: str = "") -> str:
    """A horizontal bar: ``value`` against ``limit`` (a red mark), or against ``total`` when there is no limit."""
    scale = max(limit * 1.25 if limit else 0, total or 0, value, 1)
    fill = "#d9480f" if limit and value > limit else "#7c6fe0"
    mark = (f'<div style="position:absolute;left:{min(limit / scale, 1) * 100:.1f}%;top:-2px;bottom:-2px;width:2px;'
            f'background:#c92a2a" title="limit {limit:,}"></div>') if limit else ""
    return (f'<div style="display:flex;align-items:center;gap:8px;margin:2px 0"><div style="position:relative;'
            f'width:260px;height:10px;background:#eceaf7;border-radius:3px"><div style="width:{min(value / scale, 1) * 100:.1f}%;'
            f'height:100%;background:{fill};border-radius:3px"></div>{mark}</div><span>{escape(label)}</span></div>')


def _preview(text: str, limit: int = 280) -> str:
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def session_card(session: CardSession) -> str:
    """HTML for ``Session._repr_html_``: id, mode, limits, window against history, memo, last resizes."""
    limits = session.settings.resolved()
    totals = session.window_totals
    mode = "summary" if limits.summary_enabled else "memo" if limits.memo_enabled else "lite"
    parts = [f"<b>Session</b> <code>{escape(session.id)}</code> · {mode} mode · {session.turns} turns · "
             f'<span style="{_MUTED}">{escape(session.counter.name)}</span>']
    set_limits = [f"{name} {value:,}" for name, value in (("chars", limits.chars), ("messages", limits.messages),
                  ("tokens", limits.tokens), ("every", limits.every_n_turns)) if value]
    parts.append(f'<div style="{_MUTED}">limits: {escape(", ".join(set_limits) or "none")}'
                 f'{" turns" if limits.every_n_turns else ""}</div>')
    history = len(session.full_chat_history)
    parts.append(_bar(totals.count, limits.messages, history, f"window {totals.count:,} of {history:,} messages"))
    if limits.tokens:
        parts.append(_bar(totals.tokens, limits.tokens, None, f"window {totals.tokens:,} tokens / budget {limits.tokens:,}"))
    else:
        parts.append(_bar(totals.chars, limits.chars, None, f"window {totals.chars:,} chars"
                          + (f" / limit {limits.chars:,}" if limits.chars else "")))
    if limits.summary_enabled and session.memo.get("summary"):
        parts.append(f'<div><b>summary</b> <span style="{_MUTED}">({len(session.memo["summary"]):,} chars)</span>: '
                     f"{_preview(str(session.memo['summary']))}</div>")
    elif session.memo_for_model:
        text = json.dumps(session.memo_for_model, ensure_ascii=False, default=str)
        parts.append(f'<div><b>memo</b> <span style="{_MUTED}">({len(text):,} chars)</span>: <code>{_preview(text)}</code></div>')
    records = list(session.trace)[-5:]
    if records:
        rows = "".join(f"<li>{escape(r.describe())}</li>" for r in records)
        parts.append(f'<div><b>last resizes</b> <span style="{_MUTED}">({len(session.trace)} recorded)</span>'
                     f'<ul style="margin:2px 0 0 18px;padding:0">{rows}</ul></div>')
    return f'<div style="{_BOX}">' + "".join(parts) + "</div>"


def view_card(view: CardView) -> str:
    """HTML for ``SessionView._repr_html_``: tokens against the budget, and the messages sent."""
    head = f"<b>View</b>: {len(view.messages)} messages, {view.tokens:,} tokens · " \
           f'<span style="{_MUTED}">{escape(view.counter)}{"" if view.exact else " (estimate)"}</span>'
    parts = [head, _bar(view.tokens, view.budget, None, f"{view.tokens:,} tokens" + (f" / budget {view.budget:,}" if view.budget else ""))]
    notes = []
    if view.truncated:
        notes.append(f"{len(view.truncated)} message(s) cut to fit")
    if view.elided:
        notes.append(f"{view.elided} step(s) of the current turn left out")
    if notes:
        parts.append(f'<div style="{_MUTED}">{escape("; ".join(notes))}</div>')
    shown: list[Any] = view.messages if len(view.messages) <= 8 else [*view.messages[:3], None, *view.messages[-4:]]
    rows = []
    for message in shown:
        if message is None:
            rows.append(f'<li style="{_MUTED}">… {len(view.messages) - 7} more …</li>')
            continue
        text = message.text if hasattr(message, "text") else str(message.content)
        calls = getattr(message, "tool_calls", None)
        if calls:
            text += " " + " ".join(f"→ {c.get('name')}()" for c in calls)
        rows.append(f"<li><b>{escape(message.type)}</b>: {_preview(text, 140)}</li>")
    parts.append(f'<ul style="margin:2px 0 0 18px;padding:0">{"".join(rows)}</ul>')
    return f'<div style="{_BOX}">' + "".join(parts) + "</div>"
