"""Whether a value comes back exactly from a store (a session's memo and metadata): ``unstorable``
names the first part that would not, and how to store it; ``stores.codec`` refuses such a save
(``StoreError``, nothing written), a memo fold such a memo (``MemoUpdateError``: a bad reply).

Every store encodes them as JSON (orjson, ``json`` where orjson refuses) and reads them back with
orjson, so a value JSON has no exact form for would come back changed: a NaN or an infinity as
null, a datetime, date, time or UUID as a string, a dataclass as a dict, a tuple as a list, an int
key as a string, an int past 64 bits as a float. Those are refused, the same on JSONL, SQLite and
Postgres. The check is one orjson round trip compared with the value (C speed); only a value that
does not come back equal is walked to name the culprit.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import math
from typing import Any

from session_graph.errors import StoreError

try:
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

__all__ = ["MAX_STORED_DEPTH", "check_stored", "dumps", "unstorable"]

MAX_STORED_DEPTH = 250
"""How deeply a memo or metadata value may nest: within orjson's 255 levels (its round trip
refuses deeper), past which a load copies it with ``copy.deepcopy`` (``_base.edits.detached``),
which recurses out of the stack."""
_INTS = (-(2**63), 2**64 - 1)  # what orjson reads back as an int (past it: a float)
_FIXES = {
    "datetime": "store value.isoformat() (and parse it back when read)",
    "date": "store value.isoformat() (and parse it back when read)",
    "time": "store value.isoformat() (and parse it back when read)",
    "UUID": "store str(value)",
    "Decimal": "store str(value) (or float(value) if rounding is fine)",
    "set": "store a sorted list",
    "frozenset": "store a sorted list",
}


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON, as every store encodes it (orjson when it can; ``json``
    for what orjson refuses)."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # an int past 64 bits, a subclass orjson will not take...
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def unstorable(value: Any, where: str) -> str | None:
    """Why a store would not give ``value`` (at ``where``, e.g. ``session.metadata``) back
    exactly, naming its first such part and how to store it; None when it would."""
    if orjson is not None:
        try:
            if orjson.loads(orjson.dumps(value)) == value:
                return None
        except (TypeError, ValueError):  # a type, key or int orjson refuses; walked below
            pass
    return _walk(value, where)


def check_stored(value: Any, where: str) -> None:
    """Raise ``StoreError`` when a store would not give ``value`` back exactly (a save: nothing written)."""
    why = unstorable(value, where)
    if why is not None:
        raise StoreError(f"{why}. Nothing was saved.")


def _refuse(at: str, what: str, fix: str) -> str:
    return f"{at} is {what}, which a store cannot give back as it is; {fix}"


def _walk(value: Any, where: str) -> str | None:
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, at, level = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                return _refuse(at, f"a string with a lone surrogate ({item[error.start]!r})",
                               "decode the text with errors='replace' (or fix its source)")
        elif isinstance(item, int):
            if not _INTS[0] <= item <= _INTS[1]:
                return _refuse(at, "an int past 64 bits (read back as a float)", "store it as a string: str(value)")
        elif isinstance(item, float):
            if not math.isfinite(item):
                return _refuse(at, f"{item!r} (JSON has no NaN or infinity)", "store None or a string")
        elif isinstance(item, Mapping | list):
            if level >= MAX_STORED_DEPTH:
                return _refuse(at, f"nested deeper than {MAX_STORED_DEPTH} levels", "flatten it")
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return _refuse(at, f"a dict with the key {key!r} (JSON keys are strings)",
                                      "use string keys: str(key)")
                    if not key.isascii():  # a key with a lone surrogate: what no store can encode
                        try:
                            key.encode("utf-8")
                        except UnicodeEncodeError:
                            return _refuse(at, f"a dict with the key {key!r} (a lone surrogate in it)",
                                           "decode the text with errors='replace' (or fix its source)")
                    stack.append((child, f"{at}[{key!r}]", level + 1))
            else:
                stack.extend((child, f"{at}[{index}]", level + 1) for index, child in enumerate(item))
        elif isinstance(item, tuple):
            return _refuse(at, "a tuple (JSON has lists only; read back as a list)", "store a list")
        elif isinstance(item, bytes | bytearray | memoryview):
            return _refuse(at, "raw bytes", "base64-encode them into a string")
        else:
            kind = type(item).__name__
            if hasattr(item, "__dataclass_fields__"):
                fix = "store dataclasses.asdict(value)"
            elif hasattr(item, "item") and type(item).__module__ == "numpy":
                fix = "store value.item() (or value.tolist() for an array)"
            else:
                fix = _FIXES.get(kind, "convert it to a string, number, list or dict")
            return _refuse(at, f"a {kind}", fix)
    return None
