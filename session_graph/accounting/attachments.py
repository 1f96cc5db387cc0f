"""Attachment summaries: what a non-text content part is, where it lives, how big it is.

A summary is ``{"type", "ref", "meta"}``: ``ref`` is the first of ``file``, ``url``,
``path``, ``id``, ``name`` found on the part or inside the nested object providers use
(``image_url.url``, ``input_audio``, ``file``, ``source``); ``meta`` keeps ``name``,
``mime_type``, ``size``, ``width``, ``height``, ``duration`` (an inline image's width and
height are read from its header when the part does not give them). Inline binary (base64 data
URLs and base64 blocks) never lands in a summary: its ref becomes a short digest.
"""

from __future__ import annotations

from collections.abc import Mapping
import hashlib
import re
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph.accounting.image_size import image_size
from session_graph.messages import content_parts

__all__ = ["is_inline_binary", "summarize_attachments", "summarize_part"]

_REF_KEYS = ("file", "url", "path", "id", "name")
_META_KEYS = ("name", "mime_type", "size", "width", "height", "duration")
_BASE64_KEYS = ("base64", "data", "file_data")
_BASE64_TEXT = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}$")


def summarize_attachments(message: BaseMessage) -> list[dict[str, Any]]:
    """The default attachment-summary handler: one summary per non-text content part."""
    return [summarize_part(part) for part in content_parts(message) if _is_attachment(part)]


def summarize_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """Summarise one non-text content part (see the module docstring for the shape)."""
    objects = [part, *(value for value in part.values() if isinstance(value, Mapping))]
    inline = _inline_payload(part)
    ref = None
    for key in _REF_KEYS:
        for obj in objects:
            value = obj.get(key)
            if isinstance(value, str) and value and not _is_data_url(value):
                ref = value
                break
        if ref is not None:
            break
    meta: dict[str, Any] = {}
    for key in _META_KEYS:
        for obj in objects:
            if key in obj and not isinstance(obj[key], Mapping):
                meta[key] = obj[key]
                break
    if "mime_type" not in meta:
        for obj in objects:
            for alias in ("media_type", "format"):
                if isinstance(obj.get(alias), str):
                    meta["mime_type"] = obj[alias]
                    break
            if "mime_type" in meta:
                break
    if inline is not None:
        mime, payload = inline
        if mime and "mime_type" not in meta:
            meta["mime_type"] = mime
        if "width" not in meta and "height" not in meta and (mime or "image/").startswith("image/"):
            size = image_size(payload)  # read from the PNG/JPEG/GIF/WebP header
            if size is not None:
                meta["width"], meta["height"] = size
        meta.setdefault("size", len(payload) * 3 // 4 - payload[-2:].count("="))
        if ref is None:
            digest = hashlib.sha256(payload.encode("ascii", "ignore")).hexdigest()[:16]
            ref = f"inline:sha256:{digest}"
    return {"type": part.get("type"), "ref": ref, "meta": meta}


def is_inline_binary(part: Any) -> bool:
    """True if a content part carries its bytes inline (a base64 data URL or block)."""
    return isinstance(part, Mapping) and _inline_payload(part) is not None


def _is_attachment(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") not in (None, "text")


def _is_data_url(value: str) -> bool:
    return value.startswith("data:") and ";base64," in value[:200]


def _inline_payload(part: Mapping[str, Any], depth: int = 0) -> tuple[str | None, str] | None:
    """(mime type, base64 text) of an inline binary part, or None if it has none."""
    if depth > 3:
        return None
    base64_block = part.get("source_type") == "base64" or part.get("type") == "base64"
    for key, value in part.items():
        if isinstance(value, str):
            if _is_data_url(value):
                head, _, payload = value.partition(",")
                return head[5:].split(";", 1)[0] or None, payload
            if key in _BASE64_KEYS and value and (base64_block or _BASE64_TEXT.match(value[:4096])):
                mime = part.get("mime_type") or part.get("media_type")
                return (mime if isinstance(mime, str) else None), value
        elif isinstance(value, Mapping):
            found = _inline_payload(value, depth + 1)
            if found is not None:
                return found
    return None
