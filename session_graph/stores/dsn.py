"""What a store target names, and how to show one without its password.

A target is a Postgres DSN in any form libpq and psycopg accept (``postgresql://`` or
``postgres://`` URLs, with the password in the user info or in ``?password=``, and
``key=value`` connection strings), a SQLAlchemy-style ``postgresql+psycopg://`` URL, a SQLite
file (``sqlite:///relative.db``, ``sqlite:////abs.db``, or a path ending ``.db``,
``.sqlite``, ``.sqlite3``), or a directory for the JSONL store. An unknown URL scheme is an
error, never a directory name; so is ``sqlite://x.db``, whose meaning differs between tools.
Every message, repr and log line shows targets through ``redact``.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Literal
from urllib.parse import quote, unquote

from session_graph.errors import StoreError

__all__ = ["Target", "parse_target", "password_of", "redact", "scrub"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_CONNINFO = re.compile(r"^\s*[A-Za-z_]+\s*=")
# libpq ends a URL's user info at the first "@" before any "/" (so a password may hold "?", "#"
# or ":"), and a URL may sit inside another DSN (``dbname=postgresql://...``): match anywhere.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*):([^/@\s]*)@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\s]*", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|(?:\\.|\S)+)", re.IGNORECASE)
_POSTGRES = ("postgresql", "postgres")
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed store target: which backend, and what to open it with."""

    kind: Literal["postgres", "sqlite", "jsonl"]
    value: str


def parse_target(text: str) -> Target:
    """The backend a target names (see the module docstring).

    Raises:
        StoreError: an unknown URL scheme, or an ambiguous ``sqlite://`` URL.
    """
    match = _SCHEME.match(text)
    if match:
        scheme = match.group(1).lower()
        base = scheme.split("+", 1)[0]
        if base in _POSTGRES:
            return Target("postgres", "postgresql://" + text[match.end() :] if "+" in scheme else text)
        if scheme == "sqlite":
            rest = text[match.end() :]
            if not rest.startswith("/") or rest == "/":
                raise StoreError(
                    f"{redact(text)} is ambiguous; write sqlite:///relative/file.db or sqlite:////absolute/file.db."
                )
            return Target("sqlite", rest[1:])
        raise StoreError(
            f"unknown store URL scheme {scheme!r} in {redact(text)}; use a postgresql:// DSN, a sqlite:/// URL, "
            "a .db file, or a directory for the JSONL store."
        )
    if _CONNINFO.match(text):
        return Target("postgres", text)
    if text.endswith(_SQLITE_SUFFIXES):
        return Target("sqlite", text)
    return Target("jsonl", text)


def redact(text: str, dsn: str | None = None) -> str:
    """``text`` with every DSN password in it replaced by ``***`` (URL user info, ``?password=``,
    ``password=``), and, when the DSN ``text`` came from is given (or ``text`` is one), with
    whatever psycopg parses as its password too, wherever it still shows."""
    redacted = _USERINFO.sub(lambda m: f"{m.group(1)}:***@", text)
    redacted = _QUERY_PASSWORD.sub(r"\1***", redacted)
    redacted = _KV_PASSWORD.sub(r"\1***", redacted)
    secret = password_of(text if dsn is None else dsn)
    if secret:
        for form in sorted({secret, quote(secret, safe=""), unquote(secret)}, key=len, reverse=True):
            redacted = redacted.replace(form, "***")
    return redacted


def password_of(dsn: str) -> str | None:
    """The password a DSN carries, if any, as libpq reads it (psycopg's ``conninfo_to_dict``
    when it is installed and the text parses; else the patterns of ``redact``)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        scheme = _SCHEME.match(dsn)
        plain = "postgresql://" + dsn[scheme.end() :] if scheme and "+" in scheme.group(1) else dsn
        secret = conninfo_to_dict(plain).get("password")
        if secret:
            return str(secret)
    except Exception:  # not psycopg's to parse (a path, free text), or psycopg is missing: the patterns decide
        pass
    match = _USERINFO.search(dsn)
    if match and match.group(2):
        return match.group(2)
    for pattern in (_QUERY_PASSWORD, _KV_PASSWORD):
        found = pattern.search(dsn)
        if found:
            value = found.group(0)[len(found.group(1)) :]
            return value.strip("'") or None
    return None


def scrub(message: str, dsn: str) -> str:
    """A driver's error text with the DSN's password (and any DSN in it) redacted."""
    return redact(message, dsn)
