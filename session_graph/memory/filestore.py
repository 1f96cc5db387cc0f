"""FileMemoryStore: a LangGraph ``BaseStore`` of Markdown files in OpenViking's layout.

A namespace is a directory path and an item one ``.md`` file: ``("user", "alice",
"memories", "preferences")`` / ``"editor_theme"`` is ``user/alice/memories/preferences/
editor_theme.md``; an item whose key names its own namespace (the profile) sits beside
it: ``user/alice/memories/profile.md``. Each file is front matter (JSON, which YAML
readers accept: namespace, key, times and the value's other fields) and the item's
``content`` as the Markdown body, so the files read well and diff well. Writes replace a
file atomically (temp file, fsync, rename); a per-owner ``flock`` (``owner_lock``) lets
processes sharing the directory serialise their edits of one owner's memories.

``search(query=...)`` ranks with the built-in BM25 (``bm25.py``, over an item's text and its
retrieval ``terms``) and returns only items that share a term with the query; filters take exact values and ``$eq/$ne/$gt/$gte/$lt/$lte``.
Parsed files are cached by (mtime, size), so a search over 10,000 items re-reads only what
changed.

A damaged file (no or unreadable front matter, empty, truncated, not UTF-8, a bad date, a
value that is not a mapping, nesting too deep) or a symbolic link is skipped and reported (a
``RuntimeWarning``, the package's logger, and ``store.damaged``: path -> reason), never
followed or fatal: the owner's other memories and their commits go on. A put on a damaged
item's key first moves the damaged file aside (``<name>.md.damaged``), so nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
import contextlib
from datetime import UTC, datetime
import json
import logging
import os
from pathlib import Path
import threading
from typing import Any
import warnings

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
import yaml

from session_graph._base.files import decode_name, encode_name, lock_file, unlock_file
from session_graph._base.paths import fresh_file, inside
from session_graph.errors import StoreError
from session_graph.memory.bm25 import Bm25
from session_graph.memory.items import searchable_text, terms_text

__all__ = ["FileMemoryStore", "matches_filter"]

_FENCE = "---\n"
log = logging.getLogger(__name__)


def matches_filter(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """Whether ``value`` passes a ``BaseStore`` filter (exact values or ``$`` operators)."""
    for field, wanted in (conditions or {}).items():
        have = value.get(field)
        if isinstance(wanted, dict) and any(str(k).startswith("$") for k in wanted):
            for operator, operand in wanted.items():
                ok = {
                    "$eq": lambda a, b: a == b,
                    "$ne": lambda a, b: a != b,
                    "$gt": lambda a, b: a is not None and a > b,
                    "$gte": lambda a, b: a is not None and a >= b,
                    "$lt": lambda a, b: a is not None and a < b,
                    "$lte": lambda a, b: a is not None and a <= b,
                }.get(operator)
                if ok is None:
                    raise ValueError(f"unsupported filter operator {operator!r}; use $eq, $ne, $gt, $gte, $lt or $lte.")
                if not ok(have, operand):
                    return False
        elif have != wanted:
            return False
    return True


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"a time must be an ISO 8601 string, got {type(value).__name__}")
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _regular(stat: os.stat_result) -> bool:
    """Whether an ``lstat`` result is a regular file (not a link, folder or device)."""
    import stat as kinds

    return kinds.S_ISREG(stat.st_mode)


class FileMemoryStore(BaseStore):
    """Memories as Markdown files under ``path`` (``./.session_graph/memory`` by default).

    Args:
        path: the root directory (created on the first write).
        fsync: flush each write to disk (turn off only for throwaway data).
    """

    def __init__(self, path: str | os.PathLike[str] = ".session_graph/memory", *, fsync: bool = True) -> None:
        self.root = Path(path)
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root} is a file; a memory store needs a directory. Pick another path.")
        self.fsync = fsync
        self._cache: dict[Path, tuple[int, int, Item]] = {}
        self._index = Bm25()
        self._guard = threading.RLock()
        self.damaged: dict[str, str] = {}  # path -> why it was skipped

    def __repr__(self) -> str:
        return f"FileMemoryStore({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------------
    def _dir(self, namespace: Iterable[str]) -> Path:
        return self.root.joinpath(*(encode_name(label) for label in namespace))

    def path_of(self, namespace: tuple[str, ...], key: str) -> Path:
        """The file an item lives in."""
        if len(namespace) >= 2 and key == namespace[-1]:
            return self._dir(namespace[:-1]) / f"{encode_name(key)}.md"
        return self._dir(namespace) / f"{encode_name(key)}.md"

    @contextlib.contextmanager
    def owner_lock(self, owner: tuple[str, str]) -> Iterator[None]:
        """An exclusive lock on one owner's memories that other processes respect."""
        lock = self._dir(owner) / ".lock"
        inside(self.root, lock.relative_to(self.root), "memory lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as handle:
            lock_file(handle)
            try:
                yield
            finally:
                unlock_file(handle)

    # -- BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get, put, search and list-namespaces operations in order."""
        results: list[Result] = []
        with self._guard:
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op.namespace, op.key))
                elif isinstance(op, PutOp):
                    self._put(op)
                    results.append(None)
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._namespaces(op))
                else:
                    raise ValueError(f"FileMemoryStore cannot run {type(op).__name__}.")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of ``batch`` (in a worker thread: file I/O never blocks the event loop)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations --------------------------------------------------------------------------
    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        item = self._sound(self.path_of(tuple(namespace), key))
        return item if item is not None and item.namespace == tuple(namespace) and item.key == key else None

    def _sound(self, path: Path) -> Item | None:
        """The item in ``path``, or None when there is none or it is damaged (skipped and reported)."""
        try:
            return self._load(path)
        except StoreError as error:
            self._forget(path)
            if self.damaged.get(str(path)) != str(error):
                self.damaged[str(path)] = str(error)
                message = f"memory store {self.root}: skipped a damaged memory file: {error}"
                warnings.warn(message, RuntimeWarning, stacklevel=2)
                log.warning("%s", message)
            return None

    def _put(self, op: PutOp) -> None:
        namespace, path = tuple(op.namespace), self.path_of(tuple(op.namespace), op.key)
        if op.value is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            self._forget(path)
            return
        now = datetime.now(UTC).isoformat()
        inside(self.root, path.parent.relative_to(self.root), "memory folder")  # never written through a linked folder
        old = self._get(namespace, op.key)
        if old is None and (path.is_symlink() or path.exists()) and str(path) in self.damaged:
            os.replace(path, path.with_name(path.name + ".damaged"))  # kept for a person to look at, out of search
        created = old.created_at.isoformat() if old is not None else now
        value = dict(op.value)
        content = value.pop("content", None)
        head = {"namespace": list(namespace), "key": op.key, "created_at": created, "updated_at": now,
                "body": "content" if isinstance(content, str) else None, "value": value}
        if not isinstance(content, str) and content is not None:
            value["content"] = content
        text = _FENCE + json.dumps(head, ensure_ascii=False, indent=1) + "\n" + _FENCE + (content if isinstance(content, str) else "")
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with fresh_file(temporary) as handle:
            handle.write(text)
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
        os.replace(temporary, path)
        self._forget(path)

    def _forget(self, path: Path) -> None:
        cached = self._cache.pop(path, None)
        if cached is not None:
            self._index.remove((cached[2].namespace, cached[2].key))

    def _load(self, path: Path) -> Item | None:
        try:
            stat = path.lstat()
        except FileNotFoundError:
            self._forget(path)
            return None
        if not _regular(stat):
            raise StoreError(f"{path} is a symbolic link or not a regular file; the store never follows links. "
                             "Replace it with the real file or delete it.")
        inside(self.root, path.relative_to(self.root), "memory file")
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stat.st_mtime_ns and cached[1] == stat.st_size:
            return cached[2]
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as error:
            raise StoreError(f"{path} is not UTF-8 text ({error}); fix or delete it.") from None
        try:
            item = self._parse(text, path)
        except StoreError:
            raise
        except (ValueError, TypeError, RecursionError, yaml.YAMLError) as error:
            raise StoreError(f"{path} has damaged front matter ({type(error).__name__}: {str(error)[:200]}); "
                             "fix or delete it.") from None
        self._forget(path)
        self._cache[path] = (stat.st_mtime_ns, stat.st_size, item)
        self._index.add((item.namespace, item.key), f"{searchable_text(item.value)} {terms_text(item.value)}")  # with its retrieval terms
        return item

    @staticmethod
    def _parse(text: str, path: Path) -> Item:
        if not text.startswith(_FENCE) or f"\n{_FENCE}" not in text[len(_FENCE) - 1 :]:
            raise StoreError(f"{path} has no front matter (--- ... ---); restore it or delete it.")
        end = text.index(f"\n{_FENCE}", len(_FENCE) - 1)
        raw, body = text[len(_FENCE) : end], text[end + 1 + len(_FENCE) :]
        try:
            head = json.loads(raw)
        except ValueError:
            try:  # a person edited it as YAML
                head = yaml.safe_load(raw)
            except (yaml.YAMLError, RecursionError) as error:
                raise StoreError(f"{path} has unreadable front matter ({type(error).__name__}); fix or delete it.") from None
        if not isinstance(head, dict) or not isinstance(head.get("namespace"), list) or not isinstance(head.get("key"), str):
            raise StoreError(f"{path}: the front matter needs 'namespace' (a list) and 'key'; fix or delete it.")
        if not all(isinstance(label, str) for label in head["namespace"]) or not isinstance(head.get("value") or {}, dict):
            raise StoreError(f"{path}: 'namespace' must list strings and 'value' must be a mapping; fix or delete it.")
        value = dict(head.get("value") or {})
        if head.get("body") == "content":
            value["content"] = body
        return Item(value=value, key=head["key"], namespace=tuple(head["namespace"]),
                    created_at=_time(head.get("created_at") or "1970-01-01T00:00:00+00:00"),
                    updated_at=_time(head.get("updated_at") or "1970-01-01T00:00:00+00:00"))

    def _files(self, prefix: tuple[str, ...]) -> Iterator[Path]:
        base = self._dir(prefix)
        if prefix:
            beside = self._dir(prefix[:-1]) / f"{encode_name(prefix[-1])}.md"
            if beside.is_file() or beside.is_symlink():
                yield beside
        if base.is_dir():
            for folder, _, names in os.walk(base):
                for name in names:
                    if name.endswith(".md") and not name.startswith("."):
                        yield Path(folder) / name

    def items(self, prefix: tuple[str, ...]) -> list[Item]:
        """Every item whose namespace starts with ``prefix``."""
        with self._guard:
            found = (self._sound(path) for path in self._files(tuple(prefix)))
            return [item for item in found if item is not None and item.namespace[: len(prefix)] == tuple(prefix)]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        items = [item for item in self.items(tuple(op.namespace_prefix)) if matches_filter(item.value, op.filter)]
        if op.query:
            by_id = {(item.namespace, item.key): item for item in items}
            ranked = self._index.search(op.query, limit=op.offset + op.limit, among=by_id)
            chosen = [(by_id[doc_id], score) for doc_id, score in ranked]  # type: ignore[index]
        else:
            items.sort(key=lambda item: item.updated_at, reverse=True)
            chosen = [(item, None) for item in items]
        return [SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
                for item, score in chosen[op.offset : op.offset + op.limit]]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {item.namespace for item in self.items(())}
        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            def fits(ns: tuple[str, ...], path: tuple[str, ...] = path, kind: str = condition.match_type) -> bool:
                if len(ns) < len(path):
                    return False
                pairs = zip(ns, path, strict=False) if kind == "prefix" else zip(reversed(ns), reversed(path), strict=False)
                return all(p == "*" or a == p for a, p in pairs)
            found = {ns for ns in found if fits(ns)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]


def _decode(label: str) -> str:  # pragma: no cover - kept for readers of the layout
    return decode_name(label) or label
