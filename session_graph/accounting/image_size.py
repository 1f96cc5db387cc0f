"""Width and height of an inline image, read from the first bytes of its base64 data.

PNG, JPEG, GIF and WebP headers carry the size; reading it needs no image library, only the
few bytes (or, for a JPEG, the segments up to its frame header) decoded from the data URL.
"""

from __future__ import annotations

import base64
import binascii
import struct

__all__ = ["image_size"]

_STEP = 64 * 1024  # base64 characters decoded at a time (a JPEG's frame header may follow its EXIF)
_LIMIT = 4 * 1024 * 1024
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_size(payload: str) -> tuple[int, int] | None:
    """(width, height) of the image in a base64 ``payload``, or None if it is not one we can read."""
    payload = "".join(payload[: _LIMIT].split()) if any(c.isspace() for c in payload[:256]) else payload
    size = None
    for end in range(_STEP, min(len(payload), _LIMIT) + _STEP, _STEP):
        chunk = payload[: min(end, len(payload)) // 4 * 4]
        try:
            data = base64.b64decode(chunk)
        except (binascii.Error, ValueError):
            return None
        size, complete = _read(data)
        if size is not None or complete or end >= len(payload):
            return size
    return size


def _read(data: bytes) -> tuple[tuple[int, int] | None, bool]:
    """(size, whether more bytes could not help)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return (struct.unpack(">II", data[16:24]) if len(data) >= 24 else None), len(data) >= 24
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return (struct.unpack("<HH", data[6:10]) if len(data) >= 10 else None), len(data) >= 10
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data), len(data) >= 30
    if data[:2] == b"\xff\xd8":
        return _jpeg(data)
    return None, True


def _webp(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _jpeg(data: bytes) -> tuple[tuple[int, int] | None, bool]:
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            return None, True  # not a marker where one must be: damaged
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            position += 2
            continue
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        if marker in _SOF:
            if position + 9 > len(data):
                return None, False
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return (width, height), True
        if marker == 0xDA:  # the image data starts and no frame header came first
            return None, True
        position += 2 + length
    return None, False
