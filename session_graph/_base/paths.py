"""Paths built from data stay inside their root, and files are never reached through a link.

Every place that turns data (a tool-call id, an archive name, a session id, a file name kept
in metadata, a folder found on disk) into a path goes through here:

- :func:`plain_name` refuses a name that is not one ordinary path component (empty, ``.``,
  ``..``, a separator, NUL or another control character, longer than a file system allows);
  :func:`folder_name` turns any id into such a component (unchanged when it already is one).
- :func:`inside` resolves a path and refuses it when it leaves its root or crosses a symbolic
  link below the root (the root itself may be a link: the caller chose it).
- :func:`read_text` and :func:`replace_text` read and write through those checks, the write
  atomically (temporary file opened ``O_EXCL | O_NOFOLLOW``, then a rename that replaces a link
  rather than following it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import IO, Any

from session_graph.errors import DocumentError, StoreError

__all__ = ["folder_name", "fresh_file", "inside", "plain_name", "read_text", "replace_text"]

MAX_NAME_BYTES = 240  # below every common file system's 255, leaving room for the temporary-file suffix
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _problem(name: object) -> str | None:
    if not isinstance(name, str) or not name:
        return "is empty or not a string"
    if name in (".", ".."):
        return "is a relative path step"
    if "/" in name or "\\" in name:
        return "contains a path separator"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "contains a NUL or control character"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def plain_name(name: object, what: str) -> str:
    """``name`` if it is one ordinary path component; else a ``DocumentError`` naming it.

    Args:
        name: the candidate file or folder name.
        what: what it is, for the message (``"archive name"``).
    """
    problem = _problem(name)
    if problem is not None:
        raise DocumentError(f"the {what} {str(name)[:80]!r} {problem}; it cannot name a file, so nothing was written.")
    return name  # type: ignore[return-value]


def folder_name(value: str) -> str:
    """A path component for any id: the id itself when it is a plain name, else a readable,
    collision-free stand-in (its safe characters, then a hash of the whole id)."""
    if _problem(value) is None and not value.startswith("."):
        return value
    kept = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(value))[:60]
    return f"{kept}~{hashlib.sha256(str(value).encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str = "file") -> Path:
    """``path`` (relative to ``root`` or under it), checked to stay inside ``root`` without
    crossing a symbolic link; the path as given.

    Raises:
        StoreError: it leaves ``root`` (``..``, an absolute part) or a link lies on the way.
    """
    base = Path(root)
    full = base / path
    real_root = os.path.realpath(base)
    try:
        relative = Path(os.path.relpath(os.path.abspath(full), os.path.abspath(base)))
    except ValueError:  # another drive on Windows
        relative = Path("..")
    if relative.parts[:1] == ("..",) or relative.is_absolute():
        raise StoreError(f"the {what} {full} lies outside {base}; nothing was read or written there.")
    step = Path(real_root)
    for part in relative.parts:
        if part == ".":
            continue
        step = step / part
        if step.is_symlink():
            raise StoreError(
                f"the {what} {full} is reached through the symbolic link {step}; a store or an import never follows "
                "links (they could lead outside its folder). Replace the link with the real file or folder."
            )
    return base / relative  # normalised: a later ``..`` never climbs out of a link the walk did not check


def read_text(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str = "file") -> str | None:
    """The UTF-8 text of ``root/path`` (None when there is no such file), never through a link.

    Raises:
        StoreError: a link on the way, outside ``root``, unreadable, or not UTF-8 (naming the file).
    """
    full = inside(root, path, what)
    try:
        descriptor = os.open(full, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreError(f"cannot read the {what} {full}: {error}") from error
    with open(descriptor, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StoreError(f"the {what} {full} is not UTF-8 text ({error}); convert or remove it.") from None


def fresh_file(path: str | os.PathLike[str], *, binary: bool = False) -> IO[Any]:
    """A new file at ``path`` for writing (UTF-8 text, or bytes with ``binary``); whatever was at
    that name (a leftover temporary file, a link planted there) is removed first, and the open
    never follows a link."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    return open(descriptor, "wb") if binary else open(descriptor, "w", encoding="utf-8", newline="")


def replace_text(root: str | os.PathLike[str], path: str | os.PathLike[str], text: str, what: str = "file") -> Path:
    """Write ``text`` to ``root/path`` atomically, creating folders, never through a link."""
    full = inside(root, path, what)
    try:
        full.parent.mkdir(parents=True, exist_ok=True)
        inside(root, path, what)  # nothing raced a link in while the folders were made
        temporary = full.with_name(f".{full.name}.{os.getpid()}.tmp")
        try:
            with fresh_file(temporary) as handle:
                handle.write(text)
            os.replace(temporary, full)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as error:
        if isinstance(error, StoreError):
            raise
        raise StoreError(f"cannot write the {what} {full}: {error}") from error
    return full
