"""Inline images are priced by their real size, read from the header of their base64 data."""

from __future__ import annotations

import base64

from langchain_core.messages import HumanMessage
import pytest

from session_graph import TiktokenCounter, message_tokens, summarize_attachments
from session_graph.accounting.image_size import image_size
from session_graph.accounting.tokens import image_tokens

# The first bytes (up to the size fields) of images written by Pillow.
HEADERS = {
    "png 100x100": ("iVBORw0KGgoAAAANSUhEUgAAAGQAAABkCAIAAAD/gAI=", (100, 100)),
    "jpeg 2048x4096": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0"
        "Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjL/wAARCBAACAADASI=",
        (2048, 4096),
    ),
    "gif 3001x17": ("R0lGODdhuQsRAIEAAAAAAAAAAAAAAAAAACwAAAAAuQs=", (3001, 17)),
    "webp lossy 640x480": ("UklGRlgCAABXRUJQVlA4IEwCAADQQwCdASqAAuABPm0=", (640, 480)),
    "webp lossless 1x7": ("UklGRhoAAABXRUJQVlA4TA4AAAAvAIABAAcQEf0PREQ=", (1, 7)),
}


@pytest.mark.parametrize("name", list(HEADERS))
def test_sizes_are_read_from_the_header(name: str) -> None:
    payload, size = HEADERS[name]
    assert image_size(payload) == size


def test_a_jpeg_frame_header_after_a_large_exif_block_is_found() -> None:
    exif = b"\xff\xe1" + (2 + 60_000).to_bytes(2, "big") + b"E" * 60_000  # a 60 kB APP1 segment: 80 kB of base64
    sof = b"\xff\xc0\x00\x11\x08" + (480).to_bytes(2, "big") + (640).to_bytes(2, "big") + b"\x03" + b"\x00" * 9
    data = b"\xff\xd8" + exif + sof + b"\xff\xda\x00\x02"
    assert image_size(base64.b64encode(data).decode()) == (640, 480)


@pytest.mark.parametrize("payload", ["", "not base64 !!", base64.b64encode(b"hello world").decode(), "iVBORw0KGgo="])
def test_what_is_not_a_readable_image_has_no_size(payload: str) -> None:
    assert image_size(payload) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("png 100x100", 85 + 170),  # one tile
        ("jpeg 2048x4096", 85 + 170 * 6),  # 2048 x 4096 -> 1024 x 2048 -> 768 x 1536: 2 x 3 tiles = 1,105
    ],
)
def test_inline_images_cost_their_tiles_not_a_flat_guess(name: str, expected: int) -> None:
    payload, _ = HEADERS[name]
    mime = "image/jpeg" if name.startswith("jpeg") else "image/png"
    part = {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{payload}", "detail": "auto"}}
    assert image_tokens(part) == expected
    counter = TiktokenCounter("o200k_base")
    message = HumanMessage(content=[part])
    assert message_tokens(message, counter) == 3 + counter.count_text("user") + expected
    (summary,) = summarize_attachments(message)
    assert (summary["meta"]["width"], summary["meta"]["height"]) == HEADERS[name][1]


def test_a_size_given_on_the_part_wins_over_the_header() -> None:
    payload, _ = HEADERS["png 100x100"]
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{payload}"}, "width": 1024, "height": 1024}
    assert image_tokens(part) == 85 + 170 * 4
