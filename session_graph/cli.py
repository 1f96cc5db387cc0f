"""The command line: the offline demo, and ``sessions`` to look after stored sessions.

::

    session-graph [--turns N]                       the offline demo
    session-graph sessions [--store PATH|DSN] [--tenant T] list
    session-graph sessions show KEY
    session-graph sessions export KEY --format md|json|txt
    session-graph sessions delete KEY
    session-graph sessions search TEXT
    session-graph sessions import-nanobot PATH

The store is a directory (JSONL, default ``./.session_graph``), a ``.db``/``sqlite:///`` path,
or a ``postgresql://`` DSN; ``SESSION_GRAPH_STORE`` sets the default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from session_graph.errors import SessionGraphError
from session_graph.stores.dsn import redact
from session_graph.stores.manager import SessionManager

__all__ = ["main"]

_WRITES = ("import-nanobot",)  # every other command only reads: it never creates a store


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="session-graph sessions", description="Look after stored sessions.")
    parser.add_argument("--store", default=os.environ.get("SESSION_GRAPH_STORE", ".session_graph"),
                        help="a directory (JSONL), a .db file or sqlite:/// URL, or a postgresql:// DSN")
    parser.add_argument("--tenant", default="default", help="the tenant whose sessions to see")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="sessions, newest first").add_argument("--json", action="store_true")
    commands.add_parser("show", help="one session: stats and transcript").add_argument("key")
    export = commands.add_parser("export", help="one session as md, json or txt")
    export.add_argument("key")
    export.add_argument("--format", choices=["md", "json", "txt"], default="md")
    commands.add_parser("delete", help="remove a session").add_argument("key")
    commands.add_parser("search", help="messages containing TEXT").add_argument("text")
    commands.add_parser("import-nanobot", help="import nanobot session files").add_argument("path")
    return parser


def sessions(argv: list[str]) -> int:
    """``session-graph sessions ...``; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        manager = SessionManager(args.store, tenant=args.tenant, create=args.command in _WRITES)
        try:
            return _run(manager, args)
        finally:
            manager.close()
    except (SessionGraphError, KeyError, ValueError) as error:
        print(f"session-graph: {str(error).strip(chr(39))}", file=sys.stderr)
        return 1


def _run(manager: SessionManager, args: argparse.Namespace) -> int:
    if args.command == "list":
        infos = manager.list_sessions()
        if args.json:
            print(json.dumps([_as_dict(info) for info in infos], indent=2, ensure_ascii=False))
        else:
            for info in infos:
                print(f"{info.key}\t{info.message_count} messages\tupdated {info.updated_at}\tcreated {info.created_at}")
            if not infos:
                print(f"no sessions in {redact(args.store)} for tenant {args.tenant!r}")
    elif args.command == "show":
        stats = manager.stats(args.key)
        roles = ", ".join(f"{role} {count}" for role, count in sorted(stats.by_role.items()))
        print(f"{stats.key}: {stats.messages} messages ({roles}); {stats.first_at} .. {stats.last_at} "
              f"({stats.duration_seconds:.0f} s); average reply {stats.average_reply_chars:.0f} chars\n")
        print(manager.export(args.key, "txt"), end="")
    elif args.command == "export":
        print(manager.export(args.key, args.format))
    elif args.command == "delete":
        if not manager.delete(args.key):
            print(f"session-graph: no session {args.key!r}", file=sys.stderr)
            return 1
        print(f"deleted {args.key}")
    elif args.command == "search":
        hits = manager.search(args.text)
        for hit in hits:
            print(f"{hit.key}#{hit.seq}\t{hit.role}\t{hit.ts}\t{hit.text[:120]!r}")
        if not hits:
            print(f"no message contains {args.text!r}")
    elif args.command == "import-nanobot":
        for key in manager.import_nanobot(args.path):
            print(f"imported {key}")
    return 0


def _as_dict(info: object) -> dict[str, object]:
    return {name: getattr(info, name) for name in info.__slots__}  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``session-graph`` and ``python -m session_graph``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "sessions":
        return sessions(argv[1:])
    from session_graph.demo import main as demo

    return demo(argv)
