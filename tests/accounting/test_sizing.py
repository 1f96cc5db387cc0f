"""Size accounting and attachment summaries."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session, message_chars, summarize_attachments
from session_graph.accounting import sizing

PIXELS = "iVBORw0KGgo" * 3000  # ~33 KB of base64


def test_text_messages_count_role_plus_one_plus_text() -> None:
    assert message_chars(HumanMessage(content="hello")) == len("user") + 1 + 5
    assert message_chars(AIMessage(content="hey")) == len("assistant") + 1 + 3
    assert message_chars(ToolMessage(content="r", tool_call_id="c")) == len("tool") + 1 + 1


def test_parts_count_text_or_json_and_inline_binary_by_its_summary() -> None:
    url_part = {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}
    inline = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXELS}"}}
    message = HumanMessage(content=[{"type": "text", "text": "see"}, url_part, inline])
    (summary,) = [s for s in summarize_attachments(HumanMessage(content=[inline]))]
    expected = 4 + 1 + 3 + len(json.dumps(url_part, ensure_ascii=False)) + len(json.dumps(summary, ensure_ascii=False))
    assert message_chars(message) == expected
    assert message_chars(message) < 400 < len(PIXELS)


def test_tool_calls_are_not_free() -> None:
    call = AIMessage(content="", tool_calls=[{"id": "c", "name": "search", "args": {"q": "x" * 100}}])
    assert message_chars(call) > 100


def test_each_message_is_measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = sizing.message_chars
    monkeypatch.setattr(sizing, "message_chars", lambda m: calls.append(m.id) or real(m))
    session = Session(settings={"session.limit": {"chars": 60}})
    for i in range(20):
        session.append_message({"role": "user", "content": f"question {i}"})
        session.append_message({"role": "assistant", "content": f"answer {i}"})
        session.judge_resize()
        session.resize()
    assert len(calls) == len(set(calls)) == 40
    assert session.window_totals.chars == sum(real(m) for m in session.current_chat_history)


def test_attachment_summary_refs_and_meta() -> None:
    message = HumanMessage(content=[
        "plain text part",
        {"type": "text", "text": "ignored"},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.png", "detail": "high"}, "width": 640, "height": 480},
        {"type": "file", "file": {"path": "/tmp/report.pdf", "name": "report.pdf", "mime_type": "application/pdf", "size": 1200}},
        {"type": "audio", "id": "aud_1", "duration": 3.5, "url": "https://x.test/a.wav"},
        {"type": "image", "source_type": "base64", "data": PIXELS, "mime_type": "image/png"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    ])
    image, pdf, audio, inline, audio_inline = summarize_attachments(message)
    assert image == {"type": "image_url", "ref": "https://x.test/cat.png", "meta": {"width": 640, "height": 480}}
    assert pdf["ref"] == "/tmp/report.pdf"  # file > url > path > id > name, searched in the nested object too
    assert pdf["meta"] == {"name": "report.pdf", "mime_type": "application/pdf", "size": 1200}
    assert audio["ref"] == "https://x.test/a.wav" and audio["meta"] == {"duration": 3.5}
    assert inline["ref"].startswith("inline:sha256:") and inline["meta"]["mime_type"] == "image/png"
    assert inline["meta"]["size"] > 20_000 and PIXELS not in json.dumps(inline)
    assert audio_inline["meta"]["mime_type"] == "wav" and audio_inline["ref"].startswith("inline:")
