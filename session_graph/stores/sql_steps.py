"""The SQL stores' steps: an operation is a generator of ``Exec`` steps, run by a sync or async
driver (``stores.sql``); what the SQL store and its search index (``stores.search_sql``) share.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
import json
from typing import Any

from session_graph._base.exact_json import dumps
from session_graph.errors import StoreError

__all__ = ["Exec", "Flow", "json_text", "loads", "stored_json"]


@dataclass(frozen=True)
class Exec:
    """One SQL step of an operation; ``fetch`` says what the driver sends back."""

    sql: str
    params: Any = ()
    fetch: str = ""  # "", "one", "all" or "packed" (rows one at a time, the last column into one buffer: ``PackedRows``)
    many: bool = False


Flow = Generator[Exec, Any, Any]
"""An operation: a generator of SQL steps, run by a sync or an async driver."""


try:  # installed with langchain-core (through langsmith) on CPython; 5x faster to decode
    from orjson import loads
except ImportError:  # pragma: no cover
    loads = json.loads  # type: ignore[assignment]


def json_text(value: Any) -> str:
    """``value`` as the JSON text a column stores: ``_base.exact_json.dumps``, as the JSONL store
    encodes it (orjson: a state document with its trace is ~10x faster than ``json.dumps``)."""
    return dumps(value).decode()


def stored_json(text: str, where: str) -> Any:
    """A stored JSON column, or a ``StoreError`` naming where it is broken."""
    try:
        return loads(text)
    except ValueError:
        pass  # orjson is stricter than the json module (NaN): let json decide
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise StoreError(f"{where} holds broken JSON ({error}); restore it from a backup or delete that session.") from None
