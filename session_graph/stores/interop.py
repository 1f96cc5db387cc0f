"""Other systems' session files, in and out of a SessionManager: nanobot and OpenViking.

One rule for re-imports, whichever system: ``on_existing="error"`` checks every key before
anything is written, ``"skip"`` leaves a stored session as it is, ``"replace"`` deletes it
first; and every file is turned into a session before the first one is written, so a bad
file imports nothing. The formats themselves live in :mod:`session_graph.interop.nanobot`,
:mod:`session_graph.stores.nanobot` and :mod:`session_graph.interop.openviking`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session_graph._base.ids import utc_now
from session_graph._base.progress import Progress, check_progress, tracked
from session_graph.errors import ConfigurationError, DocumentError, MessageError, StoreError
from session_graph.interop.openviking import read_openviking_session, session_directories, write_openviking_session
from session_graph.stores.base import check_key
from session_graph.stores.codec import message_record, record_message
from session_graph.stores.nanobot import NanobotSessionFile, nanobot_files, read_nanobot_session, write_nanobot_session

if TYPE_CHECKING:
    from session_graph.session import Session
    from session_graph.stores.base import SessionStore

__all__ = ["FOREIGN_FORMATS", "SessionInterop"]

FOREIGN_FORMATS = ("nanobot", "openviking")
log = logging.getLogger("session_graph")


class SessionInterop:
    """``import_nanobot``, ``import_openviking`` and ``export(key, "nanobot" | "openviking", dir)``
    of :class:`~session_graph.stores.manager.SessionManager` (a mixin: it uses the manager's
    store, tenant, session factory and cache)."""

    store: SessionStore
    tenant: str
    session_factory: Callable[[str], Session]

    if TYPE_CHECKING:  # SessionManager's, used here
        def save(self, session: Session) -> None: ...
        def delete(self, key: str) -> bool: ...
        def get(self, key: str) -> Session | None: ...
        def _snapshot(self, key: str) -> Any: ...
        def _write_new(self, session: Session, records: list[dict[str, Any]], created: str, updated: str) -> None: ...

    def import_nanobot(
        self, path: str | os.PathLike[str], *, key_for: Callable[[Path], str | None] | None = None, on_existing: str = "error",
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
        self._check_existing(((f.key, f.path) for f in found), on_existing)
        built = [(f, self._nanobot_session(f)) for f in found]
        keys = []
        for file, session in tracked(built, len(built), check_progress(progress)):
            if not self._make_room(file.key, file.path, on_existing):
                continue
            records = [message_record(message, session.arrived_at[message.id or ""]) for message, _ in file.messages]
            self._write_new(session, records, str(file.header.get("created_at") or utc_now()),
                            str(file.header.get("updated_at") or utc_now()))
            keys.append(file.key)
        log.info("imported %d nanobot sessions from %s", len(keys), path)
        return keys

    def _nanobot_session(self, found: NanobotSessionFile) -> Session:
        """The session a nanobot file becomes (nothing written)."""
        session = self.session_factory(found.key)
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

    def import_openviking(self, path: str | os.PathLike[str], *, on_existing: str = "error") -> list[str]:
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
        self._check_existing(directories, on_existing)
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
            if self._make_room(key, directory, on_existing):
                self.save(session)
                keys.append(key)
        return keys

    def _export_foreign(self, key: str, fmt: str, directory: str | os.PathLike[str] | None, progress: Progress | None) -> str:
        """``export(key, "nanobot" | "openviking", directory)``: the path written."""
        if directory is None:
            raise ConfigurationError(f"export(key, {fmt!r}, directory) needs the directory to write the session into.")
        if fmt == "openviking":
            session = self.get(key)
            if session is None:
                raise KeyError(f"no stored session {key!r} for tenant {self.tenant!r}")
            return str(write_openviking_session(session.state, directory))
        snapshot = self._snapshot(key)
        messages = [(record_message(record, f"session {key!r} message {index}"), str(record.get("ts") or ""))
                    for index, record in enumerate(tracked(snapshot.records, len(snapshot.records), check_progress(progress)))]
        metadata = dict(snapshot.state.get("metadata") or {})
        meta = metadata.pop("nanobot", None)
        metadata.pop("imported_from", None)
        return str(write_nanobot_session(key, messages, meta, metadata, str(snapshot.state.get("created_at") or ""),
                                         str(snapshot.state.get("updated_at") or ""), directory))

    # -- the re-import rule ----------------------------------------------------------------
    def _check_existing(self, sources: Iterable[tuple[str, Path]], on_existing: str) -> None:
        """Before anything is written: one key per source, and none stored already under "error"."""
        seen: dict[str, Path] = {}
        for key, source in sources:
            check_key(key)
            if key in seen:
                raise StoreError(f"{seen[key]} and {source} both hold session {key!r}; import the one you want on its own "
                                 "(a file path works as well as a folder).")
            seen[key] = source
            if on_existing == "error" and self.store.version(self.tenant, key) is not None:
                raise StoreError(f"session {key!r} from {source} is already in the store; pass on_existing='skip' or "
                                 "'replace' (CLI: --skip-existing, --replace), or delete it first.")

    def _make_room(self, key: str, source: Path, on_existing: str) -> bool:
        """Whether to write ``key`` now: False to skip a stored one, after deleting it to replace it."""
        if self.store.version(self.tenant, key) is None:
            return True
        if on_existing == "skip":
            log.info("skipped session %r from %s: already stored", key, source)
            return False
        self.delete(key)
        return True


def _check_on_existing(on_existing: str) -> None:
    if on_existing not in ("error", "skip", "replace"):
        raise ConfigurationError(f"on_existing must be 'error', 'skip' or 'replace', got {on_existing!r}.")
