"""Other systems' session files, in and out of a SessionManager: nanobot and OpenViking.

One rule for re-imports, whichever system: ``on_existing="error"`` checks every key before
anything is written, ``"skip"`` leaves a stored session as it is, ``"replace"`` deletes it
first; and every file is turned into a session before the first one is written, so a bad
file imports nothing. The formats themselves live in :mod:`session_graph.interop.nanobot`,
:mod:`session_graph.stores.nanobot` and :mod:`session_graph.interop.openviking`.

``import_nanobot``, ``import_document`` and ``import_openviking`` are functions whose first
parameter is the manager, typed by ``Importer`` (what they use of it, declared: its store, tenant,
session factory and cache, and its ``get``/``save``/``delete``), and ``SessionManager`` takes
them as its methods by name (``import_nanobot = interop.import_nanobot``), as ``Session`` takes
its groups: the docstring and signature live here, once. ``export_foreign`` is what
``SessionManager.export`` calls for ``"nanobot"`` and ``"openviking"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
import logging
import os
from pathlib import Path
from typing import Any, Protocol

from session_graph._base.ids import utc_now
from session_graph._base.progress import Progress, check_progress, tracked
from session_graph.errors import ConfigurationError, DocumentError, MessageError, StoreError
from session_graph.interop.openviking import read_openviking_session, session_directories, write_openviking_session
from session_graph.session import Session
from session_graph.stores.base import SessionStore, check_key
from session_graph.stores.codec import message_record, record_message, session_state
from session_graph.stores.nanobot import NanobotSessionFile, nanobot_files, read_nanobot_session, write_nanobot_session
from session_graph.stores.portable import is_store_export, parse_document, read_store_export, session_document
from session_graph.stores.session_load import Entry, SessionCache, stored_snapshot

__all__ = ["FOREIGN_FORMATS", "Importer", "export_foreign", "import_document", "import_nanobot", "import_openviking"]

FOREIGN_FORMATS = ("nanobot", "openviking")
log = logging.getLogger(__name__)


class Importer(Protocol):
    """What imports and exports use of a ``SessionManager``."""

    store: SessionStore
    tenant: str
    session_factory: Callable[[str], Session]
    cache: SessionCache

    def get(self, key: str) -> Session | None: ...
    def save(self, session: Session) -> None: ...
    def delete(self, key: str) -> bool: ...


def import_nanobot(
    self: Importer, path: str | os.PathLike[str], *, key_for: Callable[[Path], str | None] | None = None, on_existing: str = "error",
    progress: Progress | None = None,
) -> list[str]:
    """Import nanobot sessions (0.1.x, 0.2.x or 0.3.x files); returns the keys imported.

    Every record field is kept (see :mod:`session_graph.interop.nanobot`), so
    ``export(key, "nanobot", directory)`` writes the file back as it was. Messages before
    nanobot's archive watermark stay in the full history but not in the window, and the
    summary standing for them becomes the session's summary (``memo["summary"]``), so
    summary and memo modes show it above the window; a 0.3.x continuation marker then
    follows the summary it refers to.

    Args:
        path: a session file, a sessions folder, or 0.3.x's sessions root (its workspace
            folders are read one level down).
        key_for: ``file -> key or None`` for files with no key in them (nanobot 0.1.x);
            without it (or for None) the key is read from the file name, with a
            ``NanobotKeyWarning`` when the name is ambiguous (``a_b`` is ``a:b`` or ``a_b``).
        on_existing: ``"error"`` (default: stop before importing anything), ``"skip"`` or
            ``"replace"`` a key already stored.
        progress: told ``(files done, files)``.

    Raises:
        DocumentError: no session file there, a damaged line or a message that cannot be
            stored (naming the file).
        StoreError: a key already stored with ``on_existing="error"``, or one key in two files.
    """
    _check_on_existing(on_existing)
    found = [read_nanobot_session(file, key_for) for file in nanobot_files(path)]
    _check_existing(self, ((f.key, f.path) for f in found), on_existing)
    built = [(f, _nanobot_session(self, f)) for f in found]
    keys = []
    for file, session in tracked(built, len(built), check_progress(progress)):
        if not _make_room(self, file.key, file.path, on_existing):
            continue
        records = [message_record(message, session.arrived_at[message.id or ""]) for message, _ in file.messages]
        _write_new(self, session, records, str(file.header.get("created_at") or utc_now()),
                        str(file.header.get("updated_at") or utc_now()))
        keys.append(file.key)
    log.info("imported %d nanobot sessions from %s", len(keys), path)
    return keys

def _nanobot_session(manager: Importer, found: NanobotSessionFile) -> Session:
    """The session a nanobot file becomes (nothing written)."""
    session = manager.session_factory(found.key)
    for number, (message, _) in enumerate(found.messages, 1):
        try:
            session.append_message(message)
        except MessageError as error:
            raise DocumentError(f"{found.path}: message {number} cannot be stored: {error}") from error
    now = utc_now()
    session.arrived_at = {message.id or "": stamp or now for message, stamp in found.messages}
    nanobot_metadata = found.header.get("metadata")
    session.metadata.update({"imported_from": "nanobot", **(nanobot_metadata if isinstance(nanobot_metadata, dict) else {}),
                             "nanobot": found.meta()})
    archived, summary = found.archived, found.summary
    if archived or summary:
        state = session.state
        memo = {**state.memo, "summary": summary} if summary else state.memo
        session.restore(replace(state, current_chat_history=list(state.full_chat_history[archived:]), memo=memo,
                                memo_cursor=max(state.memo_cursor, archived)))
        limits = session.settings.resolved()
        if summary and not (limits.summary_enabled or limits.memo_enabled):
            log.warning("session %r: nanobot's summary of %d archived messages is kept in memo['summary'], but mode "
                        "%r shows no summary; use mode 'summary' or 'memo' to show it", found.key, archived,
                        session.settings.get("session.mode"))
    return session

def import_document(self: Importer, path: str | os.PathLike[str], *, key: str | None = None, on_existing: str = "error") -> list[str]:
    """Import one session from a JSON or YAML file: a stored session's export
    (``export(key, "json")``, ``session-graph sessions export KEY --format json``) or
    ``session.to_json()``/``to_yaml()``. Returns the key imported ([] when skipped).

    Args:
        path: the file.
        key: the key to store it under (default: the document's key or id).
        on_existing: ``"error"`` (default), ``"skip"`` or ``"replace"`` a key already stored.

    Raises:
        DocumentError: the file cannot be read or is not a session document (naming why).
        StoreError: the key is already stored with ``on_existing="error"``.
    """
    _check_on_existing(on_existing)
    source = Path(path)
    try:
        data = parse_document(source.read_text(encoding="utf-8"))
        read = read_store_export(data) if is_store_export(data) else None
        document = session_document(data) if read is not None else data
    except (OSError, UnicodeDecodeError) as error:
        raise DocumentError(f"{source}: cannot read it ({error}); give a JSON or YAML session export.") from error
    except DocumentError as error:
        raise DocumentError(f"{source}: {error}") from None
    if not isinstance(document, dict):
        raise DocumentError(f"{source} is not a session document (a JSON/YAML object), got {type(document).__name__}.")
    name = check_key(key if key is not None else read.key if read is not None else document.get("id"))
    _check_existing(self, [(name, source)], on_existing)
    session = self.session_factory(name)
    try:
        session.load_dict({**document, "id": name})
    except DocumentError as error:
        raise DocumentError(f"{source}: {error}") from None
    if read is not None:
        session.metadata, session.arrived_at = read.metadata, read.arrived_at
    if not _make_room(self, name, source, on_existing):
        return []
    self.save(session.touch())
    log.info("imported session %r from %s: %d messages", name, source, len(session.full_chat_history))
    return [name]

def import_openviking(self: Importer, path: str | os.PathLike[str], *, on_existing: str = "error") -> list[str]:
    """Import OpenViking session directories (one, or a folder of them); returns the keys.

    Archived and live messages become one full history; each archive a finished archive of
    the commit ledger, so the next ``commit()`` continues the numbering.

    Args:
        path: a session directory or a folder of them.
        on_existing: ``"error"`` (default: stop before importing anything), ``"skip"`` or
            ``"replace"`` a key already stored.

    Raises:
        DocumentError: a folder with no session, a damaged line (naming the file and line).
        StoreError: a key already stored with ``on_existing="error"``.
    """
    _check_on_existing(on_existing)
    directories = [(check_key(directory.name), directory) for directory in session_directories(path)]
    _check_existing(self, directories, on_existing)
    built = []
    for key, directory in directories:
        messages, ledger, archived_through = read_openviking_session(directory)
        session = self.session_factory(key)
        for message in messages:
            session.append_message(message)
        state = session.state
        state.archived_through, state.archives = archived_through, ledger
        built.append((key, directory, session.touch()))
    keys = []
    for key, directory, session in built:
        if _make_room(self, key, directory, on_existing):
            self.save(session)
            keys.append(key)
    return keys

def export_foreign(manager: Importer, key: str, fmt: str, directory: str | os.PathLike[str] | None,
                   progress: Progress | None) -> str:
    """``SessionManager.export(key, "nanobot" | "openviking", directory)``: the path written."""
    if directory is None:
        raise ConfigurationError(f"export(key, {fmt!r}, directory) needs the directory to write the session into.")
    if fmt == "openviking":
        session = manager.get(key)
        if session is None:
            raise KeyError(f"no stored session {key!r} for tenant {manager.tenant!r}")
        return str(write_openviking_session(session.state, directory))
    snapshot = stored_snapshot(manager.store, manager.tenant, key)
    messages = [(record_message(record, f"session {key!r} message {index}"), str(record.get("ts") or ""))
                for index, record in enumerate(tracked(snapshot.records, len(snapshot.records), check_progress(progress)))]
    metadata = dict(snapshot.state.get("metadata") or {})
    meta = metadata.pop("nanobot", None)
    metadata.pop("imported_from", None)
    return str(write_nanobot_session(key, messages, meta, metadata, str(snapshot.state.get("created_at") or ""),
                                     str(snapshot.state.get("updated_at") or ""), directory))

# -- the re-import rule ----------------------------------------------------------------
def _check_existing(manager: Importer, sources: Iterable[tuple[str, Path]], on_existing: str) -> None:
    """Before anything is written: one key per source, and none stored already under "error"."""
    seen: dict[str, Path] = {}
    for key, source in sources:
        check_key(key)
        if key in seen:
            raise StoreError(f"{seen[key]} and {source} both hold session {key!r}; import the one you want on its own "
                             "(a file path works as well as a folder).")
        seen[key] = source
        if on_existing == "error" and manager.store.version(manager.tenant, key) is not None:
            raise StoreError(f"session {key!r} from {source} is already in the store; pass on_existing='skip' or "
                             "'replace' (CLI: --skip-existing, --replace), or delete it first.")

def _make_room(manager: Importer, key: str, source: Path, on_existing: str) -> bool:
    """Whether to write ``key`` now: False to skip a stored one, after deleting it to replace it."""
    if manager.store.version(manager.tenant, key) is None:
        return True
    if on_existing == "skip":
        log.info("skipped session %r from %s: already stored", key, source)
        return False
    manager.delete(key)
    return True


def _write_new(manager: Importer, session: Session, records: list[dict[str, Any]], created: str, updated: str) -> None:
    """Write a session the store does not hold (an import), with its own times, and cache it."""
    state = session_state(session, created, updated)
    version = manager.store.write(manager.tenant, session.id, records, state)
    manager.cache.remember(session.id, Entry(session, version, len(records), session.revision, created, state))


def _check_on_existing(on_existing: str) -> None:
    if on_existing not in ("error", "skip", "replace"):
        raise ConfigurationError(f"on_existing must be 'error', 'skip' or 'replace', got {on_existing!r}.")
